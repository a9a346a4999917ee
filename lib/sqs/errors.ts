/**
 * The SQS adapter's own error types, with literal names (see `lib/core/errors.ts`); the shared ones
 * (`InvalidJsonError`, `PayloadTooLargeError`, ...) live in the core.
 */

/** GetQueueUrl answered without a URL: the source queue (or its DLQ) cannot be found. */
export class QueueNotFoundError extends Error {
  override name = "QueueNotFoundError";
}
