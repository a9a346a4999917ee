/**
 * What a Kafka event source mapping with a schema registry (`SchemaRegistryConfig`) did to a
 * record's key and value before the function saw them, and how a copy of the record says so.
 *
 * The mapping fetches the writer's schema by the id in each validated part's framing, deserializes
 * the part, and hands it over as JSON text (`EventRecordFormat: JSON`) or as the source bytes with
 * the framing removed (`SOURCE`: "Lambda removes all schema metadata, such as the schema ID"),
 * telling the id in the record's `keySchemaMetadata` / `valueSchemaMetadata`
 * (`{ dataFormat, schemaId }`). A part it cannot deserialize never reaches the function: Lambda
 * sends the record to the mapping's on-failure destination with `DESERIALIZATION_ERROR` (or
 * `SCHEMA_NOT_FOUND`), or drops it without one ("Using schema registries with Kafka event sources
 * in Lambda", Lambda developer guide: "How Lambda performs schema validation for Kafka messages").
 *
 * So the bytes the consumer holds are no longer what a registry-aware reader can read, and a copy
 * of them on a retry or dead-letter topic is not either. The design (docs/kafka.md, "The MSK
 * trigger's own schema registry"): the retry topics' mappings have no registry, and every copy
 * carries the part in the form the function got it plus a header per part (`x-value-schema`,
 * `x-key-schema`) that says which form and which schema id; a consumer reads a copy by its header
 * exactly as it read the original, and a replay into the main topic frames the part again
 * (`reframe.ts`). Why not frame each copy again at once: with `JSON` that means encoding JSON back
 * into Avro or Protobuf with the writer's schema, which costs a registry call on every failure (a
 * registry outage would then hold back every failed record) and can differ from the original bytes
 * (JSON drops Avro's union branches and bytes types); copying what the function got is exact, and
 * the encoding is left to the replay, which an operator runs and watches.
 */

import type { KafkaRecordView, SchemaMetadata } from "./mskEvent.ts";
import { SCHEMA_REGISTRY_ENV } from "./schemas/env.ts";

/**
 * The Lambda event source mapping's own schema-registry integration (`SchemaRegistryConfig`), which
 * `addMskTrigger` sets and tells the function about through the environment: Lambda has already
 * validated the listed attributes against the registry and hands them over as JSON text
 * (`eventRecordFormat: "JSON"`) or as the original bytes with the framing removed (`"SOURCE"`).
 * The consumer reads those parts accordingly, so the handler is the same in every mode.
 */
export interface LambdaSchemaRegistryMode {
  readonly eventRecordFormat: "JSON" | "SOURCE";
  readonly attributes: ReadonlyArray<"KEY" | "VALUE">;
}

/** The mode the MSK trigger's environment declares; undefined when the mapping has no registry. */
export function lambdaSchemaRegistryFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): LambdaSchemaRegistryMode | undefined {
  const format = env[SCHEMA_REGISTRY_ENV.eventRecordFormat];
  if (format !== "JSON" && format !== "SOURCE") return undefined;
  const attributes = (env[SCHEMA_REGISTRY_ENV.attributes] ?? "VALUE")
    .split(",")
    .map((a) => a.trim().toUpperCase())
    .filter((a): a is "KEY" | "VALUE" => a === "KEY" || a === "VALUE");
  return { eventRecordFormat: format, attributes };
}

/** One part (key or value) as a registry mapping handed it over. */
export interface LambdaDecodedPart {
  /** JSON text of the deserialized part, or the source bytes without their framing. */
  readonly recordFormat: "JSON" | "SOURCE";
  /** The writer schema's format (`AVRO`, `PROTOBUF`, `JSON`), when the mapping said it. */
  readonly dataFormat?: string;
  /** The writer schema's id (Confluent: a number; Glue: the schema version UUID), when known. */
  readonly schemaId?: string;
}

/** Which parts of a record a registry mapping handed over decoded (absent: as produced). */
export interface LambdaDecodedParts {
  readonly key?: LambdaDecodedPart;
  readonly value?: LambdaDecodedPart;
}

/** The headers a copy of a record says, per part, what form that part is in. */
export const DECODED_PART_HEADERS = { key: "x-key-schema", value: "x-value-schema" } as const;

const DECODED_NAMES: ReadonlySet<string> = new Set(Object.values(DECODED_PART_HEADERS));

/** True for the names of `DECODED_PART_HEADERS`. */
export const isDecodedPartHeader = (name: string): boolean => DECODED_NAMES.has(name);

/** A part's header value: `{"recordFormat":"SOURCE","dataFormat":"AVRO","schemaId":"42"}`. */
export function decodedPartHeader(part: LambdaDecodedPart): string {
  return JSON.stringify({
    recordFormat: part.recordFormat,
    ...(part.dataFormat !== undefined ? { dataFormat: part.dataFormat } : {}),
    ...(part.schemaId !== undefined ? { schemaId: part.schemaId } : {}),
  });
}

/** A part's header read back; undefined for anything that is not one. */
export function readDecodedPartHeader(text: string | undefined): LambdaDecodedPart | undefined {
  if (text === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  const o = v as { recordFormat?: unknown; dataFormat?: unknown; schemaId?: unknown } | null;
  if (o?.recordFormat !== "JSON" && o?.recordFormat !== "SOURCE") return undefined;
  return {
    recordFormat: o.recordFormat,
    ...(typeof o.dataFormat === "string" ? { dataFormat: o.dataFormat } : {}),
    ...(typeof o.schemaId === "string" ? { schemaId: o.schemaId } : {}),
  };
}

function lastHeaderText(view: KafkaRecordView, name: string): string | undefined {
  for (let i = view.headers.length - 1; i >= 0; i--)
    if (view.headers[i]!.name === name) return view.headers[i]!.value.toString("utf8");
  return undefined;
}

/**
 * What form `view`'s key and value are in. A copy says so in its headers (its topic's mapping has
 * no registry: the bytes are as the first mapping handed them over); otherwise a part the mapping's
 * registry validated (`mode`, from the environment) is in the mapping's format, with the schema id
 * the record's metadata gives. A null part is nothing to read.
 */
export function lambdaDecodedParts(
  view: KafkaRecordView,
  mode: LambdaSchemaRegistryMode | undefined | false,
): LambdaDecodedParts {
  const partOf = (
    part: "key" | "value",
    bytes: Buffer | null,
    metadata: SchemaMetadata | undefined,
  ): LambdaDecodedPart | undefined => {
    if (bytes === null) return undefined;
    const carried = readDecodedPartHeader(lastHeaderText(view, DECODED_PART_HEADERS[part]));
    if (carried) return carried;
    if (mode === undefined || mode === false) return undefined;
    if (!mode.attributes.includes(part === "key" ? "KEY" : "VALUE")) return undefined;
    return {
      recordFormat: mode.eventRecordFormat,
      ...(metadata?.dataFormat !== undefined ? { dataFormat: metadata.dataFormat } : {}),
      ...(metadata?.schemaId !== undefined ? { schemaId: metadata.schemaId } : {}),
    };
  };
  const key = partOf("key", view.keyBytes, view.keySchemaMetadata);
  const value = partOf("value", view.valueBytes, view.valueSchemaMetadata);
  return { ...(key ? { key } : {}), ...(value ? { value } : {}) };
}
