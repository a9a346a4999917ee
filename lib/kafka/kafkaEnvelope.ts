import type { StandardSchemaV1 } from "@standard-schema/spec";
import { type Envelope, resolveDedupKey } from "../core/envelope.ts";
import {
  InvalidJsonError,
  MalformedRecordError,
  MissingIdError,
  PayloadTooLargeError,
  SchemaValidationError,
} from "../core/errors.ts";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import { decodeHeaders, decodeUtf8, type KafkaRecordView } from "./mskEvent.ts";

export interface KafkaEnvelopeOptions<T> {
  /**
   * How to read the value: `json` (parsed), `text` (UTF-8 string) or `bytes` (the Buffer as is).
   * @default "json"
   */
  readonly parse?: "json" | "text" | "bytes";
  /** Standard Schema (zod, valibot, arktype...) the parsed value must satisfy. */
  readonly schema?: StandardSchemaV1<unknown, T>;
  /** The business key: the best dedup key (survives producer resends and regenerated events). */
  readonly key?: (body: T, record: KafkaRecordView) => string | undefined;
  /** Values larger than this are rejected as permanent errors. @default 1048576 (Kafka's default max) */
  readonly maxValueBytes?: number;
  /**
   * Accept records with a null value (tombstones of a compacted topic); the body is then `null`.
   * Otherwise a null value is a MalformedRecordError and goes to the dead-letter topic.
   * @default false
   */
  readonly allowNullValue?: boolean;
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
): Promise<Envelope<T>> {
  if (record.decodeError) throw record.decodeError;
  const headers = decodeHeaders(record.headers);
  const key = record.keyBytes === null ? undefined : decodeUtf8(record.keyBytes, "key");
  const maxBytes = options.maxValueBytes ?? 1_048_576;
  const value = record.valueBytes;
  if (value !== null && value.length > maxBytes) {
    throw new PayloadTooLargeError(`value is ${value.length} bytes, over the ${maxBytes}-byte limit`);
  }
  const mode = options.parse ?? "json";
  let raw = "";
  let body: unknown = null;
  if (value === null) {
    if (!options.allowNullValue) {
      throw new MalformedRecordError(
        "value is null (a tombstone) and this consumer does not accept null values",
      );
    }
  } else if (mode === "bytes") {
    body = value;
    raw = value.toString("base64");
  } else {
    raw = decodeUtf8(value, "value");
    body = raw;
    if (mode === "json") {
      try {
        body = JSON.parse(raw);
      } catch (error) {
        throw new InvalidJsonError(`value is not valid JSON: ${(error as Error).message}`);
      }
    }
  }
  if (options.schema && !(value === null && options.allowNullValue)) {
    let result = options.schema["~standard"].validate(body);
    if (result instanceof Promise) result = await result;
    if (result.issues) {
      throw new SchemaValidationError(
        `value does not match the schema: ${summarise(result.issues)}`,
        result.issues,
      );
    }
    body = result.value;
  }
  let businessKey: string | undefined;
  if (options.key) {
    businessKey = options.key(body as T, record);
    if (businessKey === undefined || businessKey === "") {
      throw new MissingIdError("the key function returned no business key for this record");
    }
  }
  const { id, idSource } = resolveDedupKey(businessKey, headers, brokerId(record));
  return {
    id,
    idSource,
    key,
    body: body as T,
    raw,
    headers,
    attempt: retryCountOf(headers) + 1,
    source: {
      kind: "kafka",
      topic: record.topic,
      partition: record.partition,
      offset: String(record.offset),
    },
  };
}
