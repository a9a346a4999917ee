/** The Kafka (MSK) side of the library. See docs/kafka.md. */

export { findBrokerError } from "./brokerErrors.ts";
export {
  DEFAULT_RETRY,
  type KafkaConnectionConfig,
  kafkaConfigFromEnv,
  mskIamSasl,
  toKafkaJsConfig,
} from "./config.ts";
export { NotYetDueError, RouteProduceError } from "./errors.ts";
export {
  createKafkaBatchProcessor,
  KAFKA_CONSUMER_DEFAULTS,
  KafkaBatchIncompleteError,
  type KafkaConsumerOptions,
  type KafkaIdempotencyOptions,
  type KafkaRecordContext,
  type KafkaRecordHandler,
} from "./kafkaBatchProcessor.ts";
export {
  type KafkaConsumerConfig,
  kafkaBatchMiddleware,
  kafkaConsumer,
} from "./kafkaConsumer.ts";
export {
  BinaryHeaderError,
  BinaryKeyError,
  brokerId,
  type KafkaEnvelope,
  type KafkaEnvelopeOptions,
  type LambdaSchemaRegistryMode,
  lambdaSchemaRegistryFromEnv,
  type PayloadFormat,
  retryCountOf,
  SCHEMA_REGISTRY_ENV,
  toKafkaEnvelope,
} from "./kafkaEnvelope.ts";
export type { LambdaDecodedPart, LambdaDecodedParts } from "./lambdaDecoded.ts";
export {
  type KafkaRecordView,
  type MskEventJson,
  type MskRecordJson,
  readKafkaEvent,
  type SchemaMetadata,
} from "./mskEvent.ts";
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
  type KafkaHeader,
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
export type { RegistryFor } from "./reframe.ts";
export {
  createRetryLadder,
  ladderFromRuntimeConfig,
  ladderTopics,
  type RetryLadder,
  type Route,
  routeFailure,
} from "./retryLadder.ts";
export { KeyOnRetryPathError, routedMessage } from "./routedMessage.ts";
// Schemas and registries: also importable on their own from ./schemas/index.ts.
export * from "./schemas/index.ts";
export { createTopicsWithLeaders, type TopicsWithLeadersOptions } from "./topicsWithLeaders.ts";
