/**
 * A Kinesis record read into its envelope: `data` decoded from base64 once, then read as JSON
 * (default), UTF-8 text, the bytes as they are, or by a schema decoder (`avro()`, `protobuf()`,
 * `jsonSchema()` of `reliable-consumers/kafka`, with Glue or Confluent framing or a local schema:
 * the Glue Schema Registry SerDe frames Kinesis records as it frames Kafka ones). Bad input throws
 * a typed permanent error (MalformedRecordError, InvalidJsonError, SchemaValidationError,
 * MissingIdError, UndecodableRecordError…), and the consumer parks the record.
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { KinesisStreamRecord } from "aws-lambda";
import { type Envelope, resolveDedupKey } from "../core/envelope.ts";
import { InvalidJsonError, MalformedRecordError } from "../core/errors.ts";
import type { PayloadDecoder } from "../kafka/schemas/payloadDecoder.ts";
import { businessKeyOf, validateBody } from "../streams/recordBody.ts";
import { kinesisBrokerId, kinesisCoordinates } from "./kinesisEvent.ts";

/** How a Kinesis record's data is read: JSON, UTF-8 text, the bytes, or a schema decoder. */
export type KinesisPayloadFormat = "json" | "text" | "bytes" | PayloadDecoder<unknown>;

/** The Kinesis envelope: the common envelope plus the record's place in its stream and its bytes. */
export interface KinesisEnvelope<T = unknown> extends Envelope<T> {
  /** The partition key: the ordering key (`key`) as well. */
  readonly partitionKey: string;
  /** The record's sequence number within its shard (a decimal string). */
  readonly sequenceNumber: string;
  /** The shard (`shardId-000000000006`), from the record's `eventID`. */
  readonly shardId: string | undefined;
  /** The stream's ARN (`eventSourceARN`). */
  readonly streamArn: string;
  /** When Kinesis accepted the record, in epoch seconds with a fraction (as Lambda gives it). */
  readonly approximateArrivalTimestamp: number;
  /** The record's data, decoded from base64 (once). */
  readonly data: Buffer;
}

/** How a Kinesis record is read into its envelope: parsing, schema, business key. */
export interface KinesisEnvelopeOptions<T> {
  /**
   * How to read the data: `json` (parsed), `text` (UTF-8), `bytes` (the Buffer), or a schema
   * decoder (`avro(…)`, `protobuf(…)`, `jsonSchema(…)` from `reliable-consumers/kafka`).
   * @default "json"
   */
  readonly parse?: KinesisPayloadFormat;
  /** Standard Schema (zod, valibot, arktype...) the parsed data must satisfy. */
  readonly schema?: StandardSchemaV1<unknown, T>;
  /**
   * The business key: the best dedup key. On Kinesis it matters more than elsewhere: a producer's
   * retried PutRecord is a new record with a new sequence number, which only a business key catches.
   */
  readonly key?: (body: T, record: KinesisStreamRecord) => string | undefined;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** `data` as bytes; MalformedRecordError when it is not base64 (it would decode to other bytes). */
export function kinesisData(data: string): Buffer {
  const bytes = Buffer.from(data, "base64");
  if (bytes.toString("base64").replace(/=+$/, "") !== data.replace(/=+$/, ""))
    throw new MalformedRecordError("data is not valid base64");
  return bytes;
}

async function readData(
  bytes: Buffer,
  format: KinesisPayloadFormat,
): Promise<{ body: unknown; raw: string }> {
  if (typeof format === "object") return { body: await format.decode(bytes), raw: bytes.toString("base64") };
  if (format === "bytes") return { body: bytes, raw: bytes.toString("base64") };
  let raw: string;
  try {
    raw = utf8.decode(bytes);
  } catch {
    throw new MalformedRecordError("data is not valid UTF-8");
  }
  if (format === "text") return { body: raw, raw };
  try {
    return { body: JSON.parse(raw), raw };
  } catch (error) {
    throw new InvalidJsonError(`data is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * Normalises a Kinesis record. The dedup id is the business key, else
 * `<streamArn>/<shardId>/<sequenceNumber>` (Kinesis records carry no headers, so no producer id).
 */
export async function toKinesisEnvelope<T>(
  record: KinesisStreamRecord,
  options: KinesisEnvelopeOptions<T>,
): Promise<KinesisEnvelope<T>> {
  const data = kinesisData(record.kinesis.data);
  const read = await readData(data, options.parse ?? "json");
  const body = await validateBody(options.schema, read.body, "data");
  const { id, idSource } = resolveDedupKey(
    businessKeyOf(options.key, body, record),
    {},
    kinesisBrokerId(record),
  );
  const c = kinesisCoordinates(record);
  return {
    id,
    idSource,
    key: record.kinesis.partitionKey,
    body,
    raw: read.raw,
    headers: {},
    // Lambda does not say how often it delivered a stream record before.
    attempt: 1,
    source: {
      kind: "kinesis",
      streamArn: c.streamArn,
      shardId: c.shardId,
      sequenceNumber: c.sequenceNumber,
      partitionKey: record.kinesis.partitionKey,
    },
    partitionKey: record.kinesis.partitionKey,
    sequenceNumber: c.sequenceNumber,
    shardId: c.shardId,
    streamArn: c.streamArn,
    approximateArrivalTimestamp: record.kinesis.approximateArrivalTimestamp,
    data,
  };
}
