/** The SQS side of the library. See the README. */

export { PermanentError, TransientError } from "../core/errors.ts";
export {
  CONTEXT_ATTRIBUTE,
  FOLDED_ATTRIBUTE,
  packAttributes,
  unpackAttributes,
} from "./attributePacking.ts";
export { parkInDeadLetterQueue } from "./deadLetter.ts";
export { QueueNotFoundError } from "./errors.ts";
export { type QueueInfo, QueueResolver } from "./queueResolver.ts";
export {
  createSqsBatchProcessor,
  type IdempotencyOptions,
  type RecordContext,
  SQS_CONSUMER_DEFAULTS,
  type SqsConsumerOptions,
  type SqsRecordHandler,
} from "./sqsBatchProcessor.ts";
export { createSqsClient } from "./sqsClient.ts";
export { type SqsConsumerConfig, sqsBatchMiddleware, sqsConsumer } from "./sqsConsumer.ts";
export { SQS_ENVELOPE_DEFAULTS, type SqsEnvelopeOptions, toSqsEnvelope } from "./sqsEnvelope.ts";
export { assertSqsEvent, parseQueueArn, type QueueRef } from "./sqsEvent.ts";
export { chunkSqsBatch, FIFO_ID_PATTERN, SQS_LIMITS, sqsEntryBytes } from "./sqsLimits.ts";
export { changeVisibility, MAX_VISIBILITY_SECONDS, type VisibilityChange } from "./visibility.ts";
export { type HeartbeatOptions, type HeartbeatQueue, VisibilityHeartbeat } from "./visibilityHeartbeat.ts";
