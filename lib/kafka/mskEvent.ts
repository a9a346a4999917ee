import { MalformedRecordError, UnknownEventShapeError } from "../core/errors.ts";

/**
 * The Lambda event of an Amazon MSK or self-managed Kafka event source mapping, as AWS documents it
 * (docs.aws.amazon.com/lambda/latest/dg/with-msk.html, and the Powertools / aws-lambda-rust-runtime
 * fixtures we checked against):
 *
 * ```json
 * { "eventSource": "aws:kafka" | "SelfManagedKafka", "eventSourceArn": "...", "bootstrapServers": "...",
 *   "records": { "mytopic-0": [ { "topic": "mytopic", "partition": 0, "offset": 15,
 *       "timestamp": 1545084650987, "timestampType": "CREATE_TIME",
 *       "key": "<base64>", "value": "<base64>",
 *       "headers": [ { "headerKey": [104, 101, ...] } ] } ] } }
 * ```
 *
 * `key` and `value` are base64 and may be absent or null (no key; a tombstone). Header values are
 * arrays of byte values; Java's signed bytes mean they may arrive as -128..127 as well as 0..255.
 */
export interface MskRecordJson {
  /** The topic the record was read from. */
  readonly topic: string;
  /** Its partition. */
  readonly partition: number;
  /** Its offset in the partition. */
  readonly offset: number;
  /** The record's timestamp, epoch ms (what `timestampType` says it is). */
  readonly timestamp: number;
  /** `CREATE_TIME` (set by the producer) or `LOG_APPEND_TIME` (set by the broker). */
  readonly timestampType?: string;
  /** The key bytes in base64; absent or null when the record has no key. */
  readonly key?: string | null;
  /** The value bytes in base64; absent or null for a tombstone. */
  readonly value?: string | null;
  /** The headers in order, each `{ name: [byte, …] }` (bytes may be signed, -128..127). */
  readonly headers?: ReadonlyArray<Readonly<Record<string, ReadonlyArray<number>>>>;
  /** Set by a mapping with a schema registry (SchemaRegistryConfig): the writer schema's format and id. */
  readonly keySchemaMetadata?: SchemaMetadata;
  /** As `keySchemaMetadata`, for the value. */
  readonly valueSchemaMetadata?: SchemaMetadata;
}

/** What a schema-registry mapping says about a key or value: `AVRO`/`PROTOBUF`/`JSON` and the schema id. */
export interface SchemaMetadata {
  /** The writer schema's format: `AVRO`, `PROTOBUF` or `JSON`. */
  readonly dataFormat: string;
  /** Confluent: the numeric id; Glue: the schema version UUID. */
  readonly schemaId?: string;
}

/** The event of an MSK or self-managed Kafka event source mapping. */
export interface MskEventJson {
  /** `aws:kafka` (MSK) or `SelfManagedKafka`. */
  readonly eventSource?: string;
  /** The ARN of the MSK cluster (absent for a self-managed cluster). */
  readonly eventSourceArn?: string;
  /** The cluster's bootstrap brokers, comma-separated `host:port`. */
  readonly bootstrapServers?: string;
  /** The batch's records, per `<topic>-<partition>` key, in offset order. */
  readonly records: Readonly<Record<string, ReadonlyArray<MskRecordJson>>>;
}

/** One header as it arrived: the name and the exact bytes (forwarded untouched to retry topics). */
export interface RawHeader {
  readonly name: string;
  readonly value: Buffer;
}

/** A record with its coordinates checked and its bytes decoded; `decodeError` says what was wrong. */
export interface KafkaRecordView {
  /** The key of `event.records` this record came from: exactly what a partial response must name. */
  readonly partitionKey: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  /** Key bytes; `null` when the record has no key. */
  readonly keyBytes: Buffer | null;
  /** Value bytes; `null` for a null value (a tombstone). */
  readonly valueBytes: Buffer | null;
  readonly headers: ReadonlyArray<RawHeader>;
  /** Set when the key, value or headers could not be decoded. The record goes to the dead-letter topic. */
  readonly decodeError: MalformedRecordError | undefined;
  /** From a schema-registry mapping (`SOURCE` format strips the framing and says the id here). */
  readonly keySchemaMetadata?: SchemaMetadata | undefined;
  readonly valueSchemaMetadata?: SchemaMetadata | undefined;
}

export const KAFKA_EVENT_SOURCES: ReadonlySet<string> = new Set(["aws:kafka", "SelfManagedKafka"]);

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64: Buffer.from(…, "base64") silently skips garbage, which would corrupt data unseen. */
export function decodeBase64(text: string, what: string): Buffer {
  if (!BASE64.test(text)) throw new MalformedRecordError(`${what} is not valid base64`);
  return Buffer.from(text, "base64");
}

function headerBytes(values: unknown, name: string): Buffer {
  if (!Array.isArray(values)) throw new MalformedRecordError(`header '${name}' is not an array of bytes`);
  const out = Buffer.alloc(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== "number" || !Number.isInteger(v) || v < -128 || v > 255) {
      throw new MalformedRecordError(`header '${name}' has a value that is not a byte at index ${i}`);
    }
    out[i] = v & 0xff;
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/**
 * Checks the event's shape without decoding any bytes: a Kafka event (by `eventSource`, when it
 * says), a `records` map of arrays, and every record's coordinates matching its map key. Throws
 * UnknownEventShapeError otherwise: nothing could be acknowledged or reported for it.
 */
export function assertKafkaEvent(event: unknown): asserts event is MskEventJson {
  if (!isObject(event) || !isObject(event.records)) {
    throw new UnknownEventShapeError("not a Kafka event: expected an object with a `records` map");
  }
  if (event.eventSource !== undefined && !KAFKA_EVENT_SOURCES.has(String(event.eventSource))) {
    throw new UnknownEventShapeError(
      `not a Kafka event: eventSource is '${String(event.eventSource)}', expected aws:kafka or SelfManagedKafka`,
    );
  }
  for (const [partitionKey, list] of Object.entries(event.records)) {
    if (!Array.isArray(list)) {
      throw new UnknownEventShapeError(`records['${partitionKey}'] is not an array`);
    }
    for (const [i, r] of list.entries()) assertCoordinates(partitionKey, r, i);
  }
}

/**
 * Validates the event's shape and flattens it to records, partition by partition, each partition in
 * offset order. Throws UnknownEventShapeError when the event as a whole is not a Kafka event or a
 * record lacks its coordinates (see `assertKafkaEvent`). Records whose bytes are bad are returned
 * with `decodeError` set, so they reach the dead-letter topic.
 */
export function readKafkaEvent(event: unknown): KafkaRecordView[] {
  assertKafkaEvent(event);
  const out: KafkaRecordView[] = [];
  for (const [partitionKey, list] of Object.entries(event.records)) {
    const views = list.map((r) => viewOf(partitionKey, r));
    views.sort((a, b) => a.offset - b.offset);
    out.push(...views);
  }
  return out;
}

function assertCoordinates(partitionKey: string, r: unknown, index: number): void {
  if (!isObject(r) || typeof r.topic !== "string" || !isCount(r.partition) || !isCount(r.offset)) {
    throw new UnknownEventShapeError(
      `records['${partitionKey}'][${index}] lacks a topic, partition or offset: not a Kafka record`,
    );
  }
  if (`${r.topic}-${r.partition}` !== partitionKey) {
    throw new UnknownEventShapeError(
      `records['${partitionKey}'][${index}] is ${r.topic}-${r.partition}: the map key does not match`,
    );
  }
}

/** One record whose coordinates `assertKafkaEvent` checked, with its bytes decoded. */
function viewOf(partitionKey: string, r: MskRecordJson): KafkaRecordView {
  let decodeError: MalformedRecordError | undefined;
  const attempt = <T>(fn: () => T, fallback: T): T => {
    try {
      return fn();
    } catch (error) {
      if (!(error instanceof MalformedRecordError)) throw error;
      decodeError ??= error;
      return fallback;
    }
  };
  const text = (v: unknown, what: string): Buffer | null => {
    if (v === undefined || v === null) return null;
    if (typeof v !== "string") throw new MalformedRecordError(`${what} is not a base64 string`);
    return decodeBase64(v, what);
  };
  // Undecodable bytes are kept as their raw text, so the dead-letter copy still shows what arrived.
  const rawText = (v: unknown) => (typeof v === "string" ? Buffer.from(v, "utf8") : null);
  const keyBytes = attempt(() => text(r.key, "key"), rawText(r.key));
  const valueBytes = attempt(() => text(r.value, "value"), rawText(r.value));
  const headers = attempt((): RawHeader[] => {
    if (r.headers === undefined || r.headers === null) return [];
    if (!Array.isArray(r.headers)) throw new MalformedRecordError("headers is not an array");
    const list: RawHeader[] = [];
    for (const entry of r.headers) {
      if (!isObject(entry)) throw new MalformedRecordError("a header entry is not an object");
      for (const [name, bytes] of Object.entries(entry)) list.push({ name, value: headerBytes(bytes, name) });
    }
    return list;
  }, []);
  const metadata = (v: unknown): SchemaMetadata | undefined =>
    isObject(v) && typeof v.dataFormat === "string"
      ? { dataFormat: v.dataFormat, ...(typeof v.schemaId === "string" ? { schemaId: v.schemaId } : {}) }
      : undefined;
  return {
    partitionKey,
    topic: r.topic,
    keySchemaMetadata: metadata(r.keySchemaMetadata),
    valueSchemaMetadata: metadata(r.valueSchemaMetadata),
    partition: r.partition,
    offset: r.offset,
    timestamp: typeof r.timestamp === "number" ? r.timestamp : 0,
    keyBytes,
    valueBytes,
    headers,
    decodeError,
  };
}
