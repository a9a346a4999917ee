/**
 * reliable-consumers/kafka: the Kafka (MSK) consumer, its retry ladder, the producer the ladder and
 * the outbox relay write with, and the payload formats and schema registries. `kafkaConsumer(handler,
 * config)` is the Lambda handler (a Middy handler); `kafkaBatchMiddleware` its batch-level
 * middleware. See the Kafka guide.
 */

export { findBrokerError } from "./brokerErrors.ts";
export { type KafkaConnectionConfig, kafkaConfigFromEnv, mskIamSasl, toKafkaJsConfig } from "./config.ts";
export {
  KAFKA_CONSUMER_DEFAULTS,
  type KafkaRecordContext,
  type KafkaRecordHandler,
} from "./kafkaBatchProcessor.ts";
export { type KafkaConsumerConfig, kafkaBatchMiddleware, kafkaConsumer } from "./kafkaConsumer.ts";
export type { KafkaEnvelope, PayloadFormat } from "./kafkaEnvelope.ts";
export type { MskEventJson, MskRecordJson, SchemaMetadata } from "./mskEvent.ts";
export type { KafkaBatchResponse } from "./partialResponse.ts";
export {
  disconnectAllKafkaProducers,
  getKafkaProducer,
  type KafkaHeader,
  type KafkaProducer,
  type OutgoingMessage,
  type TopicMessages,
} from "./producer.ts";
export { KafkaPublishPermanentError, KafkaPublishTransientError } from "./publishErrors.ts";
export { createRetryLadder, ladderFromRuntimeConfig, type RetryLadder } from "./retryLadder.ts";
export { avro } from "./schemas/avro.ts";
export { confluentRegistry } from "./schemas/confluentRegistry.ts";
export { avroEncoder, jsonSchemaEncoder, type PayloadEncoder, protobufEncoder } from "./schemas/encoders.ts";
export {
  SchemaFormatMismatchError,
  SchemaRegistryUnavailableError,
  UndecodableRecordError,
  UnknownSchemaError,
} from "./schemas/errors.ts";
export { glueRegistry } from "./schemas/glueRegistry.ts";
export { jsonSchema } from "./schemas/jsonSchema.ts";
export type { PayloadDecoder } from "./schemas/payloadDecoder.ts";
export { protobuf } from "./schemas/protobuf.ts";
export type { SchemaFormat, SchemaRegistry } from "./schemas/registry.ts";
export { readConfluentFrame, readGlueFrame } from "./schemas/wireFormat.ts";
export { createTopicsWithLeaders, type TopicsWithLeadersOptions } from "./topicsWithLeaders.ts";
