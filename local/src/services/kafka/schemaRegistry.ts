/**
 * A Kafka event source mapping's schema registry (`SchemaRegistryConfig`), as Lambda documents it
 * ("Using schema registries with Kafka event sources in Lambda", Lambda developer guide, and the
 * `KafkaSchemaRegistryConfig` API reference), for the local Kafka mapping (kafkaEventSource.ts):
 *
 * 1. for each validated attribute (`SchemaValidationConfigs`: KEY, VALUE) of a record, the writer's
 *    schema is fetched by the id in the part's framing (Confluent: magic byte and 4-byte id; Glue:
 *    header and schema version UUID), from the registry the mapping names (`SchemaRegistryURI`: a
 *    Glue registry ARN or a Confluent URL, with `AccessConfigs` BASIC_AUTH credentials from Secrets
 *    Manager), as the function's role: the grants `addMskTrigger` gives are what it needs;
 * 2. a schema the registry does not have: the record goes to the on-failure destination with
 *    `SCHEMA_NOT_FOUND`; a part that does not deserialize (not framed, bytes that do not decode):
 *    with `DESERIALIZATION_ERROR` (dropped without a destination);
 * 3. otherwise the function gets the part as JSON text (`EventRecordFormat: JSON`) or as the source
 *    bytes with the framing removed (`SOURCE`: "Lambda removes all schema metadata, such as the
 *    schema ID"; a Protobuf part keeps its message indexes, as Powertools reads it), and the record
 *    carries `keySchemaMetadata` / `valueSchemaMetadata` (`{ dataFormat, schemaId }`).
 *
 * The JSON of an Avro or Protobuf part is the library's decoders' plain data (a union as its value,
 * or `{ "<branch>": value }` where avsc must tell branches apart; 64-bit Protobuf integers as
 * decimal strings; bytes as `JSON.stringify` writes a Buffer): Lambda documents no more of its
 * JSON than "a standard JSON object". A registry that cannot be reached holds the partition, as
 * Lambda's poller would retry it, never failing the record.
 */

import { inflateSync } from "node:zlib";
import { GlueClient } from "@aws-sdk/client-glue";
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { KafkaMessage } from "kafkajs";
import { MalformedRecordError, SchemaValidationError } from "reliable-consumers";
import {
  avro,
  confluentRegistry,
  glueRegistry,
  jsonSchema,
  type PayloadDecoder,
  protobuf,
  readConfluentFrame,
  readGlueFrame,
  type SchemaFormat,
  SchemaFormatMismatchError,
  type SchemaMetadata,
  type SchemaRegistry,
  UndecodableRecordError,
  UnknownSchemaError,
} from "reliable-consumers/kafka";
import type { KafkaMappingSchemaRegistry } from "../../runtime/model.ts";

/** A record as the mapping hands it to the function, or why it went to the failure destination. */
export type DeserializedRecord =
  | {
      readonly ok: true;
      /** The record with its validated parts in the mapping's format. */
      readonly message: KafkaMessage;
      readonly keySchemaMetadata?: SchemaMetadata;
      readonly valueSchemaMetadata?: SchemaMetadata;
    }
  | {
      readonly ok: false;
      readonly condition: "DESERIALIZATION_ERROR" | "SCHEMA_NOT_FOUND";
      readonly error: Error;
    };

/** The mapping's deserializer: `deserialize` throws only for a registry that cannot answer now. */
export interface MappingDeserializer {
  deserialize(message: KafkaMessage): Promise<DeserializedRecord>;
}

/** Where the mapping's calls go, and as whom: the function's role, through the local gateway. */
export interface RegistryAccess {
  readonly env: Readonly<Record<string, string>>;
  readonly region: string;
  readonly credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken: string };
}

const GLUE_ARN = /^arn:[^:]+:glue:[^:]+:[^:]+:registry\/([^/]+)$/;

function registryOf(config: KafkaMappingSchemaRegistry, access: RegistryAccess): SchemaRegistry {
  const base = { region: access.region, ...(access.credentials ? { credentials: access.credentials } : {}) };
  const glue = GLUE_ARN.exec(config.uri);
  if (glue) {
    const endpoint = access.env.AWS_ENDPOINT_URL_GLUE ?? access.env.AWS_ENDPOINT_URL;
    const client = new GlueClient({ ...base, ...(endpoint ? { endpoint } : {}) });
    return glueRegistry({ client, registryName: glue[1]!, env: {} });
  }
  const secretArn = config.accessConfigs.find((a) => a.type === "BASIC_AUTH")?.uri;
  const endpoint = access.env.AWS_ENDPOINT_URL_SECRETS_MANAGER ?? access.env.AWS_ENDPOINT_URL;
  const readSecret = async (arn: string) => {
    const sm = new SecretsManagerClient({ ...base, ...(endpoint ? { endpoint } : {}) });
    const out = await sm.send(new GetSecretValueCommand({ SecretId: arn }));
    if (out.SecretString === undefined) throw new Error(`secret ${arn} has no SecretString`);
    return out.SecretString;
  };
  return confluentRegistry({
    url: config.uri,
    env: {},
    ...(secretArn ? { auth: { secretArn, readSecret } } : {}),
  });
}

/** The id in a part's framing, and the bytes SOURCE hands over: the part without the framing's head. */
function headOf(bytes: Buffer, kind: "confluent" | "glue"): { schemaId: string; source: Buffer } {
  if (kind === "confluent") {
    const f = readConfluentFrame(bytes);
    return { schemaId: String(f.schemaId), source: f.payload };
  }
  const f = readGlueFrame(bytes);
  return { schemaId: f.schemaVersionId, source: f.compression === "zlib" ? inflated(f.payload) : f.payload };
}

/** A Glue payload marked zlib; one that does not inflate is not deserializable. */
function inflated(payload: Buffer): Buffer {
  try {
    return inflateSync(payload);
  } catch (error) {
    throw new UndecodableRecordError(
      `Glue payload is marked zlib but does not inflate: ${(error as Error).message}`,
    );
  }
}

/** What only the record's bytes can cause: the record is not deserializable, whatever the registry says. */
const isRecordFault = (error: unknown) =>
  error instanceof MalformedRecordError ||
  error instanceof UndecodableRecordError ||
  error instanceof SchemaFormatMismatchError ||
  error instanceof SchemaValidationError;

/** The deserializer of a mapping with `config`; its registry client and decoders live as long as it. */
export function mappingDeserializer(
  config: KafkaMappingSchemaRegistry,
  access: RegistryAccess,
): MappingDeserializer {
  const registry = registryOf(config, access);
  const decoders: Record<SchemaFormat, PayloadDecoder<unknown>> = {
    AVRO: avro({ registry }),
    PROTOBUF: protobuf({ registry }),
    JSON: jsonSchema({ registry }),
  };
  const part = async (bytes: Buffer) => {
    const { schemaId, source } = headOf(bytes, registry.kind);
    const schema = await registry.fetchSchema(schemaId);
    const value = await decoders[schema.format].decode(bytes);
    const handed = config.eventRecordFormat === "JSON" ? Buffer.from(JSON.stringify(value), "utf8") : source;
    return { bytes: handed, metadata: { dataFormat: schema.format, schemaId } };
  };
  return {
    async deserialize(message) {
      const toBuffer = (v: Buffer | string | null | undefined) =>
        v === null || v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v);
      let key = toBuffer(message.key);
      let value = toBuffer(message.value);
      let keySchemaMetadata: SchemaMetadata | undefined;
      let valueSchemaMetadata: SchemaMetadata | undefined;
      try {
        if (config.attributes.includes("KEY") && key !== null)
          ({ bytes: key, metadata: keySchemaMetadata } = await part(key));
        if (config.attributes.includes("VALUE") && value !== null)
          ({ bytes: value, metadata: valueSchemaMetadata } = await part(value));
      } catch (error) {
        if (error instanceof UnknownSchemaError) return { ok: false, condition: "SCHEMA_NOT_FOUND", error };
        if (isRecordFault(error))
          return { ok: false, condition: "DESERIALIZATION_ERROR", error: error as Error };
        throw error;
      }
      return {
        ok: true,
        message: { ...message, key, value } as KafkaMessage,
        ...(keySchemaMetadata ? { keySchemaMetadata } : {}),
        ...(valueSchemaMetadata ? { valueSchemaMetadata } : {}),
      };
    },
  };
}
