/**
 * The Kafka consumer's own error types, with literal names (see `lib/core/errors.ts`). The publish
 * errors live beside their classifier in `publishErrors.ts`; `KeyOnRetryPathError` beside the
 * routed message that records it.
 */
import { TransientError } from "../core/errors.ts";

export { KafkaPublishPermanentError, KafkaPublishTransientError } from "./publishErrors.ts";
export { KeyOnRetryPathError } from "./routedMessage.ts";

/** Thrown for the whole batch when records are unfinished and partial responses are off. */
export class KafkaBatchIncompleteError extends TransientError {
  override name = "KafkaBatchIncompleteError";
}

/** A retry-topic record that is not due yet and would not come due in the Lambda time left. */
export class NotYetDueError extends TransientError {
  override name = "NotYetDueError";
}

/** The records routed to the retry or dead-letter topics could not be produced: they stay unfinished. */
export class RouteProduceError extends TransientError {
  override name = "RouteProduceError";
}
