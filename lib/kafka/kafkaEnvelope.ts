import type { StandardSchemaV1 } from "@standard-schema/spec";
import { type Envelope, MESSAGE_ID_HEADER, resolveDedupKey } from "../core/envelope.ts";
import {
  InvalidJsonError,
  MalformedRecordError,
  MissingIdError,
  PayloadTooLargeError,
  SchemaValidationError,
} from "../core/errors.ts";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import {
  type LambdaDecodedPart,
  type LambdaSchemaRegistryMode,
  lambdaDecodedParts,
  lambdaSchemaRegistryFromEnv,
} from "./lambdaDecoded.ts";
import type { KafkaRecordView, RawHeader } from "./mskEvent.ts";
import type { PayloadDecoder } from "./schemas/payloadDecoder.ts";

/**
 * Reading the text of a header whose bytes are not UTF-8. Permanent: a handler that needs the text
 * of a binary header cannot succeed on a retry. The bytes are in `envelope.headerBytes`.
 */
export class BinaryHeaderError extends MalformedRecordError {
  override readonly name = "BinaryHeaderError";
}

/** Reading `envelope.key` (the text) of a key whose bytes are not UTF-8; the bytes are in `keyBytes`. */
export class BinaryKeyError extends MalformedRecordError {
  override readonly name = "BinaryKeyError";
}

/** The Kafka envelope: the common envelope plus the record's bytes, which Kafka defines it by. */
export interface KafkaEnvelope<T = unknown> extends Envelope<T> {
  /**
   * The key as UTF-8 text. Reading it throws BinaryKeyError when the key bytes are not UTF-8 (it is
   * then also left out of `Object.keys`); `keyBytes` always has them.
   */
  readonly key: string | undefined;
  /** The key's bytes; `null` when the record has no key. */
  readonly keyBytes: Buffer | null;
  /**
   * Header values as UTF-8 text, decoded lazily in effect: a header whose bytes are not UTF-8 is
   * not listed (`Object.keys`, spread, JSON), and reading it throws BinaryHeaderError, so only a
   * handler that really needs its text fails (and parks the record). The last value of a repeated
   * name wins.
   */
  readonly headers: Readonly<Record<string, string>>;
  /** Every header's bytes (the last value of a repeated name wins; `ctx.record.headers` has all). */
  readonly headerBytes: Readonly<Record<string, Buffer>>;
  /** A null value: a tombstone of a compacted topic. `body` is then `null` and is not validated. */
  readonly tombstone: boolean;
  /** The key decoded by `parseKey` (and checked by `keySchema`); `null` without a key; undefined without `parseKey`. */
  readonly parsedKey: unknown;
}

/** How a key or value is read: JSON, UTF-8 text, the bytes, or a schema decoder (`avro()`, `protobuf()`, `jsonSchema()`). */
export type PayloadFormat = "json" | "text" | "bytes" | PayloadDecoder<unknown>;

export { type LambdaSchemaRegistryMode, lambdaSchemaRegistryFromEnv } from "./lambdaDecoded.ts";
export { SCHEMA_REGISTRY_ENV } from "./schemas/env.ts";

async function validate<V>(schema: StandardSchemaV1<unknown, V>, input: unknown, what: string): Promise<V> {
  let result = schema["~standard"].validate(input);
  if (result instanceof Promise) result = await result;
  if (result.issues) {
    throw new SchemaValidationError(
      `${what} does not match the schema: ${summarise(result.issues)}`,
      result.issues,
    );
  }
  return result.value;
}

/**
 * Reads one key or value. `decoded`: the part is in the form a registry mapping handed it over
 * (JSON text, or the source bytes without their framing, the writer's id beside them), on the
 * record itself or on a copy of it (`lambdaDecoded.ts`); else it is as produced.
 */
async function parsePart(
  bytes: Buffer,
  format: PayloadFormat,
  part: "key" | "value",
  decoded: LambdaDecodedPart | undefined,
): Promise<{ body: unknown; raw: string }> {
  if (typeof format === "object") {
    // Lambda validated this part already: JSON text, or the source bytes without their framing.
    if (decoded?.recordFormat === "JSON") return parsePart(bytes, "json", part, undefined);
    const body = await format.decode(
      bytes,
      decoded
        ? { framing: "none", ...(decoded.schemaId !== undefined ? { schemaId: decoded.schemaId } : {}) }
        : undefined,
    );
    return { body, raw: bytes.toString("base64") };
  }
  if (format === "bytes") return { body: bytes, raw: bytes.toString("base64") };
  const raw = utf8Text(bytes) ?? fail(new MalformedRecordError(`${part} is not valid UTF-8`));
  if (format === "text") return { body: raw, raw };
  try {
    return { body: JSON.parse(raw), raw };
  } catch (error) {
    throw new InvalidJsonError(`${part} is not valid JSON: ${(error as Error).message}`);
  }
}

/** How a Kafka record is read into its envelope: parsing, schemas, the business key, limits. */
export interface KafkaEnvelopeOptions<T> {
  /**
   * How to read the value: `json` (parsed), `text` (UTF-8 string), `bytes` (the Buffer as is), or a
   * schema decoder: `avro(…)`, `protobuf(…)`, `jsonSchema(…)` from `lib/kafka/schemas`, with a
   * local schema, a registry (Confluent or Glue framing), or both (see docs/kafka.md).
   * @default "json"
   */
  readonly parse?: PayloadFormat;
  /**
   * How to read the key into `envelope.parsedKey` (same choices as `parse`). @default not parsed
   * (`key` / `keyBytes` only)
   */
  readonly parseKey?: PayloadFormat;
  /** Standard Schema the parsed key must satisfy. */
  readonly keySchema?: StandardSchemaV1;
  /**
   * The MSK trigger's schema-registry mode. @default from KAFKA_SCHEMA_REGISTRY_EVENT_RECORD_FORMAT
   * and KAFKA_SCHEMA_REGISTRY_ATTRIBUTES (set by `addMskTrigger({ schemaRegistry })`); `false`: none
   */
  readonly lambdaSchemaRegistry?: LambdaSchemaRegistryMode | false;
  /** Standard Schema (zod, valibot, arktype...) the parsed value must satisfy. */
  readonly schema?: StandardSchemaV1<unknown, T>;
  /** The business key: the best dedup key (survives producer resends and regenerated events). */
  readonly key?: (body: T, record: KafkaRecordView) => string | undefined;
  /** Values larger than this are rejected as permanent errors. @default 1048576 (Kafka's default max) */
  readonly maxValueBytes?: number;
  /**
   * Records with a null value (tombstones of a compacted topic) are not bad input: the handler sees
   * them with `tombstone: true` and `body: null` (the schema is not applied). `false` rejects them as
   * MalformedRecordError (dead-letter topic); to skip them unseen, see the consumer's `tombstones`.
   * @default true
   */
  readonly allowNullValue?: boolean;
  /**
   * What the consumer does with a tombstone it accepts: `deliver` it to the handler, or `skip` it
   * (acknowledged unseen, no dedup claim).
   * @default "deliver"
   */
  readonly tombstones?: "deliver" | "skip";
}

/** The Kafka broker coordinates, the last-resort dedup key: `topic:partition:offset`. */
export const brokerId = (r: Pick<KafkaRecordView, "topic" | "partition" | "offset">) =>
  `${r.topic}:${r.partition}:${r.offset}`;

/** `x-retry-count` of a record (0 on the main topic); garbage counts as 0. */
export function retryCountOf(headers: Readonly<Record<string, string>>): number {
  const n = Number(headers[CONTEXT_HEADERS.retryCount] ?? 0);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

function summarise(issues: ReadonlyArray<StandardSchemaV1.Issue>): string {
  return issues
    .slice(0, 5)
    .map((i) => {
      const path = (i.path ?? []).map((p) => (typeof p === "object" ? String(p.key) : String(p))).join(".");
      return `${path || "(root)"}: ${i.message}`;
    })
    .join("; ");
}

/**
 * Normalises a Kafka record to the envelope. Bad input throws a typed permanent error
 * (MalformedRecordError, PayloadTooLargeError, InvalidJsonError, SchemaValidationError, MissingIdError).
 *
 * The dedup id is the business key, else the producer's `message-id` header, else `x-message-id`
 * (which the retry ladder sets to the original id), else `topic:partition:offset`. So a record keeps
 * its id as it travels `.retry.*` topics and is deduplicated across the whole ladder.
 */
export async function toKafkaEnvelope<T>(
  record: KafkaRecordView,
  options: KafkaEnvelopeOptions<T> = {},
): Promise<KafkaEnvelope<T>> {
  if (record.decodeError) throw record.decodeError;
  const { headers, headerBytes } = headerViews(record.headers);
  const allowNull = options.allowNullValue ?? true;
  const maxBytes = options.maxValueBytes ?? 1_048_576;
  const value = record.valueBytes;
  if (value !== null && value.length > maxBytes) {
    throw new PayloadTooLargeError(`value is ${value.length} bytes, over the ${maxBytes}-byte limit`);
  }
  const lambda =
    options.lambdaSchemaRegistry === undefined ? lambdaSchemaRegistryFromEnv() : options.lambdaSchemaRegistry;
  const decoded = lambdaDecodedParts(record, lambda);
  let raw = "";
  let body: unknown = null;
  if (value === null) {
    if (!allowNull) {
      throw new MalformedRecordError(
        "value is null (a tombstone) and this consumer does not accept null values",
      );
    }
  } else {
    ({ body, raw } = await parsePart(value, options.parse ?? "json", "value", decoded.value));
    if (options.schema) body = await validate(options.schema, body, "value");
  }
  let parsedKey: unknown;
  if (options.parseKey !== undefined && record.keyBytes !== null) {
    parsedKey = (await parsePart(record.keyBytes, options.parseKey, "key", decoded.key)).body;
    if (options.keySchema) parsedKey = await validate(options.keySchema, parsedKey, "key");
  } else if (options.parseKey !== undefined) {
    parsedKey = null;
  }
  let businessKey: string | undefined;
  if (options.key) {
    businessKey = options.key(body as T, record);
    if (businessKey === undefined || businessKey === "") {
      throw new MissingIdError("the key function returned no business key for this record");
    }
  }
  const { id, idSource } = resolveDedupKey(businessKey, idHeaders(headerBytes), brokerId(record));
  const keyText = record.keyBytes === null ? undefined : utf8Text(record.keyBytes);
  const envelope = {
    id,
    idSource,
    key: keyText,
    keyBytes: record.keyBytes,
    body: body as T,
    raw,
    headers,
    headerBytes,
    tombstone: value === null,
    parsedKey,
    attempt: retryCountOf(textOrEmpty(headerBytes[CONTEXT_HEADERS.retryCount])) + 1,
    source: {
      kind: "kafka" as const,
      topic: record.topic,
      partition: record.partition,
      offset: String(record.offset),
    },
  };
  if (record.keyBytes !== null && keyText === undefined) {
    Object.defineProperty(envelope, "key", {
      enumerable: false,
      get() {
        throw new BinaryKeyError(
          "the record key is not UTF-8 text; read its bytes from envelope.keyBytes (or decode it with parseKey)",
        );
      },
    });
  }
  return envelope;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
/** The UTF-8 text of `bytes`, or undefined when they are not UTF-8. */
function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}
const fail = (error: Error): never => {
  throw error;
};
const textOrEmpty = (b: Buffer | undefined): Record<string, string> => {
  const t = b === undefined ? undefined : utf8Text(b);
  return t === undefined ? {} : { [CONTEXT_HEADERS.retryCount]: t };
};

/**
 * The producer ids the dedup key may come from. A binary id (say, a 16-byte UUID) is still an id:
 * it is taken as `0x` + hex, which is stable across redeliveries and retry topics (`x-message-id`
 * then carries that text).
 */
function idHeaders(bytes: Readonly<Record<string, Buffer>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [MESSAGE_ID_HEADER, CONTEXT_HEADERS.messageId]) {
    const b = bytes[name];
    if (b !== undefined) out[name] = utf8Text(b) ?? `0x${b.toString("hex")}`;
  }
  return out;
}

/** Text headers (binary ones as throwing, unlisted accessors) and every header's bytes. */
function headerViews(raw: ReadonlyArray<RawHeader>): {
  headers: Record<string, string>;
  headerBytes: Record<string, Buffer>;
} {
  const headers: Record<string, string> = {};
  const headerBytes: Record<string, Buffer> = {};
  for (const h of raw) {
    headerBytes[h.name] = h.value;
    const text = utf8Text(h.value);
    if (text !== undefined) {
      Object.defineProperty(headers, h.name, {
        value: text,
        enumerable: true,
        configurable: true,
        writable: false,
      });
    } else {
      const name = h.name;
      Object.defineProperty(headers, name, {
        enumerable: false,
        configurable: true,
        get() {
          throw new BinaryHeaderError(
            `header '${name}' is not UTF-8 text; read its bytes from envelope.headerBytes['${name}']`,
          );
        },
      });
    }
  }
  return { headers, headerBytes };
}
