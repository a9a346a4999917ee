/** The Kafka (MSK) side of the library. See docs/kafka.md. */

export {
  type KafkaConsumerConfig,
  kafkaBatchMiddleware,
  kafkaConsumer,
} from "../middleware/kafkaConsumer.ts";
export {
  DEFAULT_RETRY,
  type KafkaConnectionConfig,
  kafkaConfigFromEnv,
  mskIamSasl,
  toKafkaJsConfig,
} from "./config.ts";
export {
  createKafkaBatchProcessor,
  KafkaBatchIncompleteError,
  type KafkaConsumerOptions,
  type KafkaIdempotencyOptions,
  type KafkaRecordContext,
  type KafkaRecordHandler,
} from "./kafkaBatchProcessor.ts";
export { brokerId, type KafkaEnvelopeOptions, retryCountOf, toKafkaEnvelope } from "./kafkaEnvelope.ts";
export { type KafkaRecordView, type MskEventJson, type MskRecordJson, readKafkaEvent } from "./mskEvent.ts";
export { type ConsumedRecord, toMskEvent } from "./mskEventBuilder.ts";
export {
  type KafkaBatchItemFailure,
  type KafkaBatchResponse,
  type KafkaItemIdentifier,
  kafkaBatchResponse,
} from "./partialResponse.ts";
export {
  createKafkaProducer,
  disconnectAllKafkaProducers,
  getKafkaProducer,
  type KafkaProducer,
  type KafkaProducerOptions,
  type OutgoingMessage,
  type PublishedRecord,
  type TopicMessages,
} from "./producer.ts";
export {
  classifyPublishError,
  KafkaPublishPermanentError,
  KafkaPublishTransientError,
} from "./publishErrors.ts";
export {
  createRetryLadder,
  dueDecision,
  ladderFromRuntimeConfig,
  ladderTopics,
  type RetryLadder,
  type Route,
  routeFailure,
  topicRole,
} from "./retryLadder.ts";
export { KeyOnRetryPathError, routedMessage } from "./routedMessage.ts";
