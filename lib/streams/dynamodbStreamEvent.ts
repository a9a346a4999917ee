import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { UnknownEventShapeError } from "../core/errors.ts";

/**
 * Throws UnknownEventShapeError unless this is a DynamoDB Streams trigger event. A relay that read
 * `{}` or an S3 event as "zero records" would report success for a batch it never saw.
 */
export function assertDynamoDbStreamEvent(event: unknown): asserts event is DynamoDBStreamEvent {
  const records = (event as { Records?: unknown } | null)?.Records;
  if (!Array.isArray(records)) {
    throw new UnknownEventShapeError("expected a DynamoDB Streams event with a Records array");
  }
  records.forEach((r: Partial<DynamoDBRecord> | null, i) => {
    if (r?.eventSource !== "aws:dynamodb" || typeof r.dynamodb !== "object" || r.dynamodb === null) {
      throw new UnknownEventShapeError(
        `record ${i} is not a DynamoDB Streams record (eventSource=${String(r?.eventSource).slice(0, 40)})`,
      );
    }
  });
}
