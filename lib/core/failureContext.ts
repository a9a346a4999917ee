import { describeError } from "./errors.ts";

/** Dead-letter and retry context: the same names on SQS, Kafka and stream records. */
export const CONTEXT_HEADERS = {
  originalTopic: "x-original-topic",
  originalQueue: "x-original-queue",
  originalPartition: "x-original-partition",
  originalOffset: "x-original-offset",
  retryCount: "x-retry-count",
  firstFailedAt: "x-first-failed-at",
  lastError: "x-last-error",
  messageId: "x-message-id",
  consumer: "x-consumer",
} as const;

export type ContextHeaderName = (typeof CONTEXT_HEADERS)[keyof typeof CONTEXT_HEADERS];

/**
 * The context a dead-lettered or retried record carries (`x-original-topic`, `x-retry-count`,
 * `x-last-error`, ...).
 */
export interface FailureContext {
  /**
   * `x-original-topic`: the Kafka topic the record was first consumed from (kept across retry
   * topics); for a parked outbox event or stream record, its stream's ARN.
   */
  readonly originalTopic?: string;
  /** `x-original-queue`: the ARN of the SQS queue the record was received from. */
  readonly originalQueue?: string;
  /**
   * `x-original-partition`: the record's partition on its original Kafka topic, or the shard id of a
   * Kinesis record.
   */
  readonly originalPartition?: number | string;
  /**
   * `x-original-offset`: the record's offset on its original Kafka topic, or a stream record's
   * sequence number, as a decimal string.
   */
  readonly originalOffset?: string;
  /**
   * `x-retry-count`, a count: on SQS the receives before the one that parked the record; on Kafka
   * its failures so far, this one included; 0 for a parked outbox event.
   */
  readonly retryCount: number;
  /** `x-first-failed-at`: when the record first failed, an ISO-8601 timestamp. */
  readonly firstFailedAt: string;
  /**
   * `x-last-error`: the latest error's `name` (`type`) and its message, cut to 500 characters; never
   * a payload.
   */
  readonly lastError: { type: string; message: string };
  /**
   * `x-message-id`: the SQS messageId; on Kafka the record's dedup id (its broker coordinates when it
   * could not be read); an outbox event's `eventId`.
   */
  readonly messageId: string;
  /** `x-consumer`: the name of the consumer that failed the record (its dedup scope). */
  readonly consumer: string;
}

/** Builds the context for a record that failed now, carrying over the first-failure time if known. */
export function failureContext(input: {
  error: unknown;
  messageId: string;
  consumer: string;
  retryCount: number;
  previousFirstFailedAt?: string | undefined;
  now?: Date;
  originalTopic?: string;
  originalQueue?: string;
  originalPartition?: number | string;
  originalOffset?: string;
}): FailureContext {
  const { error, now = new Date(), previousFirstFailedAt, ...rest } = input;
  return {
    ...rest,
    firstFailedAt: previousFirstFailedAt ?? now.toISOString(),
    lastError: describeError(error),
  };
}

/** As string headers (Kafka headers, or one packed SQS attribute). `x-last-error` is `Type: message`. */
export function contextToHeaders(context: FailureContext): Record<string, string> {
  const h: Record<string, string> = {
    [CONTEXT_HEADERS.retryCount]: String(context.retryCount),
    [CONTEXT_HEADERS.firstFailedAt]: context.firstFailedAt,
    [CONTEXT_HEADERS.lastError]: `${context.lastError.type}: ${context.lastError.message}`,
    [CONTEXT_HEADERS.messageId]: context.messageId,
    [CONTEXT_HEADERS.consumer]: context.consumer,
  };
  if (context.originalTopic !== undefined) h[CONTEXT_HEADERS.originalTopic] = context.originalTopic;
  if (context.originalQueue !== undefined) h[CONTEXT_HEADERS.originalQueue] = context.originalQueue;
  if (context.originalPartition !== undefined)
    h[CONTEXT_HEADERS.originalPartition] = String(context.originalPartition);
  if (context.originalOffset !== undefined) h[CONTEXT_HEADERS.originalOffset] = context.originalOffset;
  return h;
}
