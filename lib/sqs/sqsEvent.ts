import type { SQSEvent, SQSRecord } from "aws-lambda";
import { UnknownEventShapeError } from "../core/errors.ts";

/** Parsed `arn:aws:sqs:<region>:<account>:<name>`. */
export interface QueueRef {
  readonly arn: string;
  readonly region: string;
  readonly accountId: string;
  readonly name: string;
  readonly fifo: boolean;
}

/** Parses an SQS queue ARN. */
export function parseQueueArn(arn: string): QueueRef {
  const parts = arn.split(":");
  if (parts.length !== 6 || parts[0] !== "arn" || parts[2] !== "sqs") {
    throw new UnknownEventShapeError(`not an SQS queue ARN: '${arn.slice(0, 200)}'`);
  }
  const [, , , region, accountId, name] = parts as [string, string, string, string, string, string];
  return { arn, region, accountId, name, fifo: name.endsWith(".fifo") };
}

/** Throws UnknownEventShapeError unless this is an SQS trigger event we can answer record by record. */
export function assertSqsEvent(event: unknown): asserts event is SQSEvent {
  const records = (event as { Records?: unknown } | null)?.Records;
  if (!Array.isArray(records)) {
    throw new UnknownEventShapeError("expected an SQS event with a Records array");
  }
  records.forEach((r: Partial<SQSRecord>, i) => {
    if (
      r?.eventSource !== "aws:sqs" ||
      typeof r.messageId !== "string" ||
      typeof r.eventSourceARN !== "string"
    ) {
      throw new UnknownEventShapeError(
        `record ${i} is not an SQS record (eventSource=${String(r?.eventSource).slice(0, 40)})`,
      );
    }
  });
}
