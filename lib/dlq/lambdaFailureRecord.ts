/**
 * What Lambda writes to a Kafka on-failure destination (`kafka://<topic>.DLQ`, the constructs'
 * mappings), read back. Pure.
 *
 * Lambda writes one message per record it gave up on ("Record format for a Kafka destination",
 * Lambda developer guide): the record's own key, no headers, and as value a JSON document with the
 * failure metadata and the record itself under `payload`, as an MSK event:
 *
 * ```json
 * { "requestContext": { "requestId": "…", "functionArn": "…", "condition": "RetriesExhausted", "approximateInvokeCount": 3 },
 *   "responseContext": { "statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled" },
 *   "version": "1.0", "timestamp": "2019-11-14T18:16:05.568Z",
 *   "KafkaBatchInfo": { "batchSize": 1, "eventSourceArn": "…", "bootstrapServers": "…", "payloadSize": 1162,
 *                       "recordInfo": { "offset": "100", "timestamp": "…" } },
 *   "payload": { "bootstrapServers": "…", "eventSource": "aws:kafka", "eventSourceArn": "…",
 *                "records": { "my-topic-0": [ { "topic": "my-topic", "partition": 0, "offset": 100,
 *                  "timestamp": 1749116692330, "timestampType": "CREATE_TIME", "key": "dGVzdC1rZXk=",
 *                  "value": "dGVzdC12YWx1ZQ==", "headers": [] } ] } } }
 * ```
 *
 * The library's own dead letters are the record with `x-*` context headers instead. This module
 * turns Lambda's into the same shape: the original key, value and headers, plus the context a
 * replay needs, taken from the record (`x-original-topic/-partition/-offset`, kept if the record
 * came from a retry topic and so already had them) and `x-message-id` (the broker coordinates the
 * consumer deduplicated it by, when the record carries no message id of its own).
 */
import type { IHeaders } from "kafkajs";
import { MESSAGE_ID_HEADER } from "../core/envelope.ts";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";

/** One record Lambda gave up on, as it was consumed. */
export interface LambdaFailedRecord {
  /** The topic the record was consumed from. */
  readonly topic: string;
  /** Its partition there. */
  readonly partition: number;
  /** Its offset there, as a decimal string. */
  readonly offset: string;
  /** The record's timestamp as Lambda wrote it (epoch ms, as a string); empty if absent. */
  readonly timestamp: string;
  /** The key bytes (base64-decoded); `null` if it had none. */
  readonly key: Buffer | null;
  /** The value bytes (base64-decoded); `null` if it had none. */
  readonly value: Buffer | null;
  /** The record's headers, then the replay context (see the module comment). */
  readonly headers: IHeaders;
}

/** Lambda's failure document, with its records opened. */
export interface LambdaFailureRecord {
  /** `RetriesExhausted` / `RetryAttemptsExhausted` (AWS's pages use both), `RecordAgeExceeded`, … */
  readonly condition: string;
  /** How many times Lambda invoked the function with the batch (a count), as Lambda reports it. */
  readonly approximateInvokeCount: number | undefined;
  /** The ARN of the function that failed the batch. */
  readonly functionArn: string | undefined;
  /** `Unhandled` (a crash, an out-of-memory kill, a timeout, an error thrown out of the handler). */
  readonly functionError: string | undefined;
  /** The records of the document's payload, each with the replay context added to its headers. */
  readonly records: readonly LambdaFailedRecord[];
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const bytesOf = (b64: unknown): Buffer | null =>
  typeof b64 === "string" ? Buffer.from(b64, "base64") : null;

/** `[{ "name": [104, 105] }, …]` (the MSK event's header form) → kafkajs headers, repeated names kept. */
function headersOf(list: unknown): Record<string, Buffer | Buffer[]> {
  const out: Record<string, Buffer | Buffer[]> = {};
  if (!Array.isArray(list)) return out;
  for (const entry of list) {
    if (!isObject(entry)) continue;
    for (const [name, bytes] of Object.entries(entry)) {
      if (!Array.isArray(bytes)) continue;
      const value = Buffer.from(bytes.map((b) => Number(b) & 0xff));
      const had = out[name];
      out[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
    }
  }
  return out;
}

/** The replay context a library dead letter carries, from the record's own coordinates. */
function withContext(
  headers: Record<string, Buffer | Buffer[]>,
  at: { topic: string; partition: number; offset: string },
): IHeaders {
  const out: IHeaders = { ...headers };
  const H = CONTEXT_HEADERS;
  // A record from a retry topic carries these already, pointing at the original.
  if (out[H.originalTopic] === undefined) {
    out[H.originalTopic] = at.topic;
    out[H.originalPartition] = String(at.partition);
    out[H.originalOffset] = at.offset;
  }
  if (out[MESSAGE_ID_HEADER] === undefined && out[H.messageId] === undefined) {
    const first = (name: string) => {
      const v = out[name];
      return (Array.isArray(v) ? v[0] : v)?.toString();
    };
    // The consumer's last-resort dedup id: the coordinates of the record as first consumed.
    out[H.messageId] = `${first(H.originalTopic)}:${first(H.originalPartition)}:${first(H.originalOffset)}`;
  }
  return out;
}

/**
 * Lambda's failure document in a dead-letter record's value, opened; `undefined` for anything else
 * (the library's own dead letters, whose value is the record itself).
 */
export function readLambdaFailureRecord(value: Buffer | null | undefined): LambdaFailureRecord | undefined {
  if (value?.[0] !== 0x7b /* { */) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(value.toString("utf8"));
  } catch {
    return undefined;
  }
  if (!isObject(doc) || !isObject(doc.requestContext) || !isObject(doc.payload)) return undefined;
  const records = doc.payload.records;
  if (!isObject(records) || !("KafkaBatchInfo" in doc)) return undefined;
  const request = doc.requestContext;
  const response = isObject(doc.responseContext) ? doc.responseContext : {};
  const opened: LambdaFailedRecord[] = [];
  for (const list of Object.values(records)) {
    if (!Array.isArray(list)) continue;
    for (const r of list) {
      if (!isObject(r) || typeof r.topic !== "string") continue;
      const at = { topic: r.topic, partition: Number(r.partition), offset: String(r.offset) };
      opened.push({
        ...at,
        timestamp: String(r.timestamp ?? ""),
        key: bytesOf(r.key),
        value: bytesOf(r.value),
        headers: withContext(headersOf(r.headers), at),
      });
    }
  }
  if (opened.length === 0) return undefined;
  return {
    condition: typeof request.condition === "string" ? request.condition : "unknown",
    approximateInvokeCount:
      typeof request.approximateInvokeCount === "number" ? request.approximateInvokeCount : undefined,
    functionArn: typeof request.functionArn === "string" ? request.functionArn : undefined,
    functionError: typeof response.functionError === "string" ? response.functionError : undefined,
    records: opened,
  };
}

/** The `x-last-error`-like text of a Lambda dead letter: what `inspect` shows and `--error-type` matches. */
export function lambdaFailureError(f: LambdaFailureRecord, r: LambdaFailedRecord): string {
  // A mapping with a schema registry gives these records up before any invocation.
  if (f.condition === "DESERIALIZATION_ERROR" || f.condition === "SCHEMA_NOT_FOUND")
    return `${f.condition}: the mapping's schema registry could not deserialize ${r.topic}:${r.partition}:${r.offset}; the function never saw it`;
  const runs = f.approximateInvokeCount === undefined ? "" : ` after ${f.approximateInvokeCount} invocations`;
  return (
    `${f.condition}: Lambda gave up on ${r.topic}:${r.partition}:${r.offset}${runs} ` +
    `(${f.functionError ?? "function error"}: a crash, an out-of-memory kill or a timeout the consumer could not route)`
  );
}
