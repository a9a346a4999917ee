/**
 * The environment variables of the schema support, in one import-free file so the CDK constructs
 * that set them do not load the runtime clients.
 */

/** The MSK trigger's schema-registry mode (set by `addMskTrigger({ schemaRegistry })`). */
export const SCHEMA_REGISTRY_ENV = {
  /** `JSON` or `SOURCE`: the mapping's EventRecordFormat. */
  eventRecordFormat: "KAFKA_SCHEMA_REGISTRY_EVENT_RECORD_FORMAT",
  /** `KEY`, `VALUE` or `KEY,VALUE`: the mapping's SchemaValidationConfigs. */
  attributes: "KAFKA_SCHEMA_REGISTRY_ATTRIBUTES",
} as const;

/** The Confluent registry client's defaults. */
export const CONFLUENT_REGISTRY_ENV = {
  url: "SCHEMA_REGISTRY_URL",
  apiKey: "SCHEMA_REGISTRY_API_KEY",
  apiSecret: "SCHEMA_REGISTRY_API_SECRET",
  username: "SCHEMA_REGISTRY_USERNAME",
  password: "SCHEMA_REGISTRY_PASSWORD",
  secretArn: "SCHEMA_REGISTRY_SECRET_ARN",
} as const;

/** The Glue registry client's defaults. */
export const GLUE_REGISTRY_ENV = { registryName: "GLUE_SCHEMA_REGISTRY_NAME" } as const;
