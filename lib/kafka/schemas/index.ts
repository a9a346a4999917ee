/** Kafka payload decoding and schema registries. See docs/kafka.md, "Schemas and registries". */
export { type AvroDecoderOptions, avro } from "./avro.ts";
export {
  CONFLUENT_REGISTRY_ENV,
  type ConfluentAuth,
  type ConfluentRegistryOptions,
  confluentRegistry,
} from "./confluentRegistry.ts";
export { avroEncoder, jsonSchemaEncoder, type PayloadEncoder, protobufEncoder } from "./encoders.ts";
export {
  SchemaFormatMismatchError,
  SchemaRegistryUnavailableError,
  UndecodableRecordError,
  UnencodableValueError,
  UnknownSchemaError,
  WireFormatError,
} from "./errors.ts";
export { GLUE_REGISTRY_ENV, type GlueRegistryOptions, glueRegistry } from "./glueRegistry.ts";
export { type JsonSchemaDecoderOptions, jsonSchema } from "./jsonSchema.ts";
export { OUTBOX_SCHEMA_HEADER } from "./outboxSchemas.ts";
export type { DecoderSource, PayloadDecoder } from "./payloadDecoder.ts";
export { type ProtobufDecoderOptions, protobuf } from "./protobuf.ts";
export type { RegistrySchema, SchemaFormat, SchemaRegistry, SchemaSubject } from "./registry.ts";
export {
  type ConfluentFrame,
  type Framing,
  type GlueFrame,
  readConfluentFrame,
  readGlueFrame,
  writeConfluentFrame,
  writeGlueFrame,
} from "./wireFormat.ts";
