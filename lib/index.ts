/**
 * reliable-consumers: the public API. Handlers (`sqsConsumer`, `kafkaConsumer`), the dedup store,
 * the inbox/outbox, and the error types handlers throw. Deeper modules: `lib/sqs`, `lib/kafka`,
 * `lib/outbox`, `lib/dlq`.
 */

export type { Envelope, KeySource, RecordSource } from "./core/envelope.ts";
export {
  ConsumerConfigError,
  ConsumerError,
  classifyError,
  type ErrorKind,
  HeldBackError,
  InProgressElsewhereError,
  InvalidJsonError,
  KeyReuseError,
  LeaseLostError,
  MalformedRecordError,
  MissingIdError,
  OutOfTimeError,
  PayloadTooLargeError,
  PermanentError,
  RecordTimeoutError,
  SchemaValidationError,
  TransientError,
  UnknownEventShapeError,
} from "./core/errors.ts";
export { CONTEXT_HEADERS, type FailureContext } from "./core/failureContext.ts";
export {
  type ClaimResult,
  createDedupStore,
  type DedupStore,
  type DedupStoreOptions,
  type Lease,
} from "./dedup/dedupStore.ts";
export {
  createIdempotency,
  type DuplicateHandler,
  type IdempotencyOptions,
  type IdempotencySetting,
} from "./dedup/idempotency.ts";
export { DEDUP_ATTR, DEDUP_DEFAULTS, DEDUP_TTL_ATTRIBUTE } from "./dedup/schema.ts";
export { KAFKA_CONSUMER_DEFAULTS } from "./kafka/kafkaBatchProcessor.ts";
export { type KafkaConsumerConfig, kafkaBatchMiddleware, kafkaConsumer } from "./kafka/kafkaConsumer.ts";
export { getKafkaProducer, type KafkaProducer } from "./kafka/producer.ts";
export { createRetryLadder, ladderFromRuntimeConfig, type RetryLadder } from "./kafka/retryLadder.ts";
export { createTelemetry, METRIC, type Telemetry, type TelemetryOptions } from "./observability/telemetry.ts";
export { createInboxOutbox, createOutboxRelay, createOutboxSweeper, withUnitOfWork } from "./outbox/index.ts";
export { type BackoffPolicy, DEFAULT_BACKOFF } from "./sqs/backoff.ts";
export { SQS_CONSUMER_DEFAULTS } from "./sqs/sqsBatchProcessor.ts";
export { createSqsClient } from "./sqs/sqsClient.ts";
export { type SqsConsumerConfig, sqsBatchMiddleware, sqsConsumer } from "./sqs/sqsConsumer.ts";
export { SQS_ENVELOPE_DEFAULTS } from "./sqs/sqsEnvelope.ts";
