import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { lambdaContext } from "../lambda/lambdaContext.ts";

/** Any SQS handler; a response that is not `{ batchItemFailures }` counts as "all succeeded". */
export type SqsLambdaHandler = (event: SQSEvent, context: Context) => Promise<unknown>;

/** Options of `invokeFromQueue`: the queue, the function's name, and the mapping's settings. */
export interface SqsTriggerOptions {
  /** The queue to receive from. */
  readonly queueUrl: string;
  /** The queue's ARN, as the records' `eventSourceARN` (its region becomes their `awsRegion`). */
  readonly queueArn: string;
  /** The function's name in the Lambda context the handler gets. */
  readonly functionName: string;
  /** The most messages in one batch (received 10 at a time). @default 10 */
  readonly batchSize?: number;
  /** The function's timeout, in ms, which the context's getRemainingTimeInMillis counts down. @default 30000 */
  readonly timeoutMs?: number;
  /** Long-poll wait of the first ReceiveMessage, in seconds. @default 1 */
  readonly waitSeconds?: number;
  /** The mapping has ReportBatchItemFailures. @default true */
  readonly reportBatchItemFailures?: boolean;
}

/** What one `invokeFromQueue` cycle did. */
export interface InvocationResult {
  /** Messages received and handed to the handler in one batch (0: the queue had none; no invocation). */
  readonly received: number;
  /** Messages deleted after the invocation (those that succeeded). */
  readonly deleted: number;
  /**
   * MessageIds left on the queue to come back after their visibility timeout: the
   * `batchItemFailures` the handler reported, or every message when it threw.
   */
  readonly failed: string[];
  /** What the handler threw, if it threw (then nothing was deleted). @default undefined */
  readonly error?: unknown;
}

/** Converts a received SQS message to the record Lambda's SQS poller would hand the function. */
export function toSqsRecord(message: Message, queueArn: string): SQSRecord {
  const region = queueArn.split(":")[3] ?? "us-east-1";
  const attrs = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? "",
    attributes: {
      ApproximateReceiveCount: attrs.ApproximateReceiveCount ?? "1",
      SentTimestamp: attrs.SentTimestamp ?? String(Date.now()),
      SenderId: attrs.SenderId ?? "local",
      ApproximateFirstReceiveTimestamp: attrs.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      ...(attrs.MessageGroupId ? { MessageGroupId: attrs.MessageGroupId } : {}),
      ...(attrs.MessageDeduplicationId ? { MessageDeduplicationId: attrs.MessageDeduplicationId } : {}),
      ...(attrs.SequenceNumber ? { SequenceNumber: attrs.SequenceNumber } : {}),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, a]) => [
        name,
        {
          dataType: a.DataType ?? "String",
          ...(a.StringValue !== undefined ? { stringValue: a.StringValue } : {}),
          ...(a.BinaryValue !== undefined
            ? { binaryValue: Buffer.from(a.BinaryValue).toString("base64") }
            : {}),
          stringListValues: [],
          binaryListValues: [],
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/**
 * One poll-and-invoke cycle with the SQS trigger's semantics: receive up to batchSize, invoke,
 * then delete what succeeded. A function error deletes nothing; with ReportBatchItemFailures the
 * listed messages stay (at whatever visibility the function left them).
 */
export async function invokeFromQueue(
  sqs: SQSClient,
  handler: SqsLambdaHandler,
  options: SqsTriggerOptions,
): Promise<InvocationResult> {
  const batchSize = options.batchSize ?? 10;
  const messages: Message[] = [];
  while (messages.length < batchSize) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: options.queueUrl,
        MaxNumberOfMessages: Math.min(10, batchSize - messages.length),
        WaitTimeSeconds: messages.length === 0 ? (options.waitSeconds ?? 1) : 0,
        MessageSystemAttributeNames: ["All"],
        MessageAttributeNames: ["All"],
      }),
    );
    if (!out.Messages?.length) break;
    messages.push(...out.Messages);
  }
  if (messages.length === 0) return { received: 0, deleted: 0, failed: [] };
  const event: SQSEvent = { Records: messages.map((m) => toSqsRecord(m, options.queueArn)) };
  let response: SQSBatchResponse | undefined;
  try {
    response = (await handler(event, lambdaContext(options.functionName, options.timeoutMs ?? 30_000))) as
      | SQSBatchResponse
      | undefined;
  } catch (error) {
    return { received: messages.length, deleted: 0, failed: messages.map((m) => m.MessageId!), error };
  }
  const failed = new Set(
    options.reportBatchItemFailures === false
      ? []
      : (response?.batchItemFailures ?? []).map((f) => f.itemIdentifier),
  );
  const toDelete = messages.filter((m) => !failed.has(m.MessageId!));
  for (let i = 0; i < toDelete.length; i += 10) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: options.queueUrl,
        Entries: toDelete
          .slice(i, i + 10)
          .map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
  return { received: messages.length, deleted: toDelete.length, failed: [...failed] };
}
