/**
 * SQS's own limits, in one place: every sender of the library (the outbox publisher, the requeue of
 * healthy records, parking) and the local gateway that enforces them read these. Pure: the size of
 * an entry is SQS's, body plus each attribute's name, type and value.
 */
import type { MessageAttributeValue } from "@aws-sdk/client-sqs";

/** SQS's message, batch, attribute, delay and visibility limits, as every sender here reads them. */
export const SQS_LIMITS = {
  /** A message, attributes included: 1 MiB since 2025 (it was 256 KiB). */
  maxMessageBytes: 1_048_576,
  /** All entries of one SendMessageBatch together, attributes included. */
  maxBatchBytes: 1_048_576,
  maxBatchEntries: 10,
  maxAttributes: 10,
  maxDelaySeconds: 900,
  /** A message's visibility, counted from its receive (12 h). */
  maxVisibilitySeconds: 43_200,
  /** A queue's retention period, in seconds: 1 minute to 14 days. */
  minRetentionSeconds: 60,
  maxRetentionSeconds: 1_209_600,
  /** A redrive policy's `maxReceiveCount`: 1 to 1,000 receives. */
  maxReceiveCount: 1000,
  /** The longest MessageGroupId or MessageDeduplicationId (see `FIFO_ID_PATTERN`). */
  maxFifoIdLength: 128,
  /** The longest queue name, a FIFO queue's `.fifo` suffix included (see `QUEUE_NAME_PATTERN`). */
  maxQueueNameLength: 80,
} as const;

/** The characters of a queue name, its `.fifo` suffix aside: alphanumerics, `-` and `_` (CreateQueue). */
export const QUEUE_NAME_PATTERN = /^[A-Za-z0-9_-]+$/;

/**
 * What SQS accepts as a MessageGroupId or MessageDeduplicationId: 1 to 128 alphanumeric characters
 * (a-z, A-Z, 0-9) and punctuation (`` !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ ``), per the SendMessage API
 * reference: every printable ASCII character but the space, and nothing else (no space, no letter
 * outside ASCII). The same rule holds for a fair queue's group id on a standard queue.
 */
export const FIFO_ID_PATTERN = new RegExp(`^[\\x21-\\x7E]{1,${SQS_LIMITS.maxFifoIdLength}}$`);

/** What SQS counts of one entry against the message and batch limits. */
export function sqsEntryBytes(entry: {
  readonly MessageBody?: string | undefined;
  readonly MessageAttributes?: Readonly<Record<string, MessageAttributeValue>> | undefined;
}): number {
  let size = Buffer.byteLength(entry.MessageBody ?? "", "utf8");
  for (const [name, attr] of Object.entries(entry.MessageAttributes ?? {})) {
    size +=
      Buffer.byteLength(name) +
      Buffer.byteLength(attr.DataType ?? "") +
      (attr.BinaryValue !== undefined ? attr.BinaryValue.length : Buffer.byteLength(attr.StringValue ?? ""));
  }
  return size;
}

/**
 * Items in SendMessageBatch-sized chunks: at most 10 entries and `maxBytes` in all. An entry larger
 * than the limit goes alone (SQS rejects that entry, not the whole call).
 */
export function chunkSqsBatch<T>(
  items: ReadonlyArray<T>,
  bytesOf: (item: T) => number,
  maxBytes: number = SQS_LIMITS.maxBatchBytes,
): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = bytesOf(item);
    if (current.length > 0 && (current.length === SQS_LIMITS.maxBatchEntries || bytes + size > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
