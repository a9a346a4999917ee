/**
 * The invocations of the run as the function host saw them (what X-Ray and Lambda's own logs
 * would tell on AWS): which function got which records, and what became of each. The console's
 * trace follows one message through it. Only ids are kept, and a few scalar values of each body
 * (the dedup key a consumer derives from it may be one of them), never a whole body.
 */

import { queueNameOf } from "../../console/consoleSources.ts";
import type { FunctionHost, InvokeResult } from "./functionHost.ts";

/** One record of an invocation's event. */
export interface RecordRef {
  readonly source: "sqs" | "kafka" | "dynamodb";
  /** The queue, topic or table it came from. */
  readonly where: string;
  /** What the function's partial response names it by (SQS messageId, Kafka offset, stream sequence number). */
  readonly item: string;
  /** Every id it is known by: its own, its producer's `message-id`, `x-message-id`, an outbox event id. */
  readonly ids: readonly string[];
  /** Scalar values of its body and keys: the business key a consumer derives may be among them. */
  readonly keys: readonly string[];
  /** A copy sent again by a replay or a redrive (it carries our failure context or `x-replayed-from`). */
  readonly replayOf?: string;
}

export interface InvocationEntry {
  readonly fn: string;
  readonly requestId: string;
  /** When it ended (epoch ms), and how long it ran. */
  readonly at: number;
  readonly durationMs: number;
  readonly ok: boolean;
  readonly error?: string;
  readonly records: readonly RecordRef[];
  /** Items its partial batch response reported as failed. */
  readonly failed: readonly string[];
}

const MAX_KEYS = 12;

/** Top-level scalar values of a JSON text (strings and numbers), as strings. */
function scalars(text: string | undefined): string[] {
  if (!text) return [];
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== "object" || v === null || Array.isArray(v)) return [];
    return Object.values(v as Record<string, unknown>)
      .filter((x) => typeof x === "string" || typeof x === "number")
      .map(String)
      .filter((s) => s.length > 0 && s.length <= 200)
      .slice(0, MAX_KEYS);
  } catch {
    return [];
  }
}

const uniq = (xs: Array<string | undefined>) => [...new Set(xs.filter((x): x is string => !!x))];

interface SqsRecordShape {
  messageId: string;
  body?: string;
  eventSourceARN?: string;
  messageAttributes?: Record<string, { stringValue?: string }>;
}

function sqsRef(r: SqsRecordShape): RecordRef {
  const attr = (name: string) => r.messageAttributes?.[name]?.stringValue;
  let contextId: string | undefined;
  try {
    const packed = attr("x-failure-context");
    contextId = packed ? (JSON.parse(packed) as Record<string, string>)["x-message-id"] : undefined;
  } catch {
    contextId = undefined;
  }
  const carried = attr("x-message-id") ?? contextId;
  return {
    source: "sqs",
    where: queueNameOf(r.eventSourceARN ?? "?"),
    item: r.messageId,
    ids: uniq([r.messageId, attr("message-id"), attr("x-message-id"), contextId]),
    keys: scalars(r.body),
    ...(attr("x-failure-context") && carried ? { replayOf: carried } : {}),
  };
}

interface KafkaRecordShape {
  topic: string;
  partition: number;
  offset: number | string;
  value?: string | null;
  headers?: Array<Record<string, number[]>>;
}

function kafkaRef(r: KafkaRecordShape): RecordRef {
  const header = (name: string) => {
    for (const h of r.headers ?? []) if (h[name]) return Buffer.from(h[name]).toString("utf8");
    return undefined;
  };
  const value = r.value ? Buffer.from(r.value, "base64").toString("utf8") : undefined;
  const replayed = header("x-replayed-from");
  return {
    source: "kafka",
    where: r.topic,
    item: `${r.topic}-${r.partition}:${r.offset}`,
    ids: uniq([`${r.topic}:${r.partition}:${r.offset}`, header("message-id"), header("x-message-id")]),
    keys: scalars(value),
    ...(replayed ? { replayOf: header("x-message-id") ?? replayed } : {}),
  };
}

type Image = Record<string, { S?: string; N?: string }>;

function streamRef(r: {
  eventSourceARN?: string;
  dynamodb?: { Keys?: Image; NewImage?: Image; SequenceNumber?: string };
}): RecordRef {
  const img = r.dynamodb?.NewImage ?? {};
  const keys = r.dynamodb?.Keys ?? {};
  const table = /:table\/([^/]+)/.exec(r.eventSourceARN ?? "")?.[1] ?? "?";
  return {
    source: "dynamodb",
    where: table,
    item: r.dynamodb?.SequenceNumber ?? "?",
    ids: uniq([img.eventId?.S]),
    keys: uniq([keys.pk?.S, keys.sk?.S, img.causationId?.S, img.aggregateId?.S]),
  };
}

/** The records of a Lambda event (SQS, MSK, DynamoDB Streams); none for anything else. */
export function recordRefs(event: unknown): RecordRef[] {
  const e = event as { Records?: Array<Record<string, unknown>>; eventSource?: string; records?: unknown };
  if (e?.eventSource === "aws:kafka" && e.records && typeof e.records === "object")
    return Object.values(e.records as Record<string, KafkaRecordShape[]>).flatMap((list) =>
      list.map(kafkaRef),
    );
  if (!Array.isArray(e?.Records)) return [];
  return e.Records.flatMap((r) =>
    r.eventSource === "aws:sqs"
      ? [sqsRef(r as unknown as SqsRecordShape)]
      : r.eventSource === "aws:dynamodb"
        ? [streamRef(r as Parameters<typeof streamRef>[0])]
        : [],
  );
}

/** The items a partial batch response reports failed (`batchItemFailures[].itemIdentifier`). */
export function failedItems(result: InvokeResult): string[] {
  if (!result.ok) return [];
  const v = result.value as { batchItemFailures?: Array<{ itemIdentifier?: unknown }> } | null;
  return (v?.batchItemFailures ?? []).map((f) => {
    const id = f.itemIdentifier;
    if (typeof id === "object" && id !== null) {
      const k = id as { partition?: string; offset?: unknown };
      return `${k.partition}:${String(k.offset)}`;
    }
    return String(id);
  });
}

/** The last `keep` invocations of the run, recorded as the host ends each. */
export function invocationTrail(host: FunctionHost, options: { keep?: number; now?: () => number } = {}) {
  const keep = options.keep ?? 5_000;
  const now = options.now ?? Date.now;
  const entries: InvocationEntry[] = [];
  const stop = host.observeInvocations((fn, event, result) => {
    entries.push({
      fn: fn.name,
      requestId: result.requestId,
      at: now(),
      durationMs: result.durationMs,
      ok: result.ok,
      ...(result.ok ? {} : { error: `${result.errorType}: ${result.errorMessage}` }),
      records: recordRefs(event),
      failed: failedItems(result),
    });
    if (entries.length > keep) entries.splice(0, entries.length - keep);
  });
  return { entries: (): readonly InvocationEntry[] => entries, stop };
}

export type InvocationTrail = ReturnType<typeof invocationTrail>;
