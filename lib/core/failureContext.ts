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
  readonly originalTopic?: string;
  readonly originalQueue?: string;
  readonly originalPartition?: number;
  readonly originalOffset?: string;
  readonly retryCount: number;
  /** ISO-8601 */
  readonly firstFailedAt: string;
  readonly lastError: { type: string; message: string };
  readonly messageId: string;
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
  originalPartition?: number;
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
