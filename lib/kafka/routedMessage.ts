import { TransientError } from "../core/errors.ts";
import { CONTEXT_HEADERS, contextToHeaders, failureContext } from "../core/failureContext.ts";
import { brokerId } from "./kafkaEnvelope.ts";
import {
  DECODED_PART_HEADERS,
  decodedPartHeader,
  isDecodedPartHeader,
  type LambdaDecodedParts,
} from "./lambdaDecoded.ts";
import type { KafkaRecordView } from "./mskEvent.ts";
import type { KafkaHeader, OutgoingMessage } from "./producer.ts";
import type { Route } from "./retryLadder.ts";

/**
 * The error recorded on a record that did not fail itself but followed an earlier record of its key
 * onto the retry path, so the key's order holds (the `keyOrder` option).
 */
export class KeyOnRetryPathError extends TransientError {
  override name = "KeyOnRetryPathError";
}

const CONTEXT_NAMES: ReadonlySet<string> = new Set(Object.values(CONTEXT_HEADERS));

function lastHeader(record: KafkaRecordView, name: string): string | undefined {
  for (let i = record.headers.length - 1; i >= 0; i--) {
    const h = record.headers[i]!;
    if (h.name === name) return h.value.toString("utf8");
  }
  return undefined;
}

/**
 * The copy of `record` that goes to a retry or dead-letter topic: the original key bytes (so it
 * lands on the partition of its key and keeps key order), the original value bytes and the user's
 * own headers untouched (every one, in order: Kafka lets a name repeat, and a reader's
 * `lastHeader` depends on the order), plus the context headers of DESIGN.md. The `x-original-*` coordinates and
 * `x-first-failed-at` are carried over from the first failure; `x-message-id` keeps the dedup id,
 * so the copy is deduplicated as the same message. The timestamp is now: a retry topic's consumer
 * waits until timestamp + the rung's delay.
 *
 * A part a registry mapping handed over decoded (`decoded`: JSON text, or the source bytes without
 * their framing) is copied as the function got it, with `x-value-schema` / `x-key-schema` saying
 * so: the retry topics' mappings have no registry, and their consumer reads the copy by that
 * header as the first one read the original; a replay frames it again (lambdaDecoded.ts).
 */
export function routedMessage(input: {
  readonly record: KafkaRecordView;
  readonly route: Route;
  readonly error: unknown;
  /** The record's dedup id (envelope.id), or broker coordinates when the record could not be read. */
  readonly messageId: string | undefined;
  readonly consumer: string;
  readonly now: Date;
  /** The parts a registry mapping handed over decoded (`lambdaDecodedParts`). @default none */
  readonly decoded?: LambdaDecodedParts;
}): OutgoingMessage & { readonly headers: ReadonlyArray<KafkaHeader> } {
  const { record, route, now } = input;
  const originalTopic = lastHeader(record, CONTEXT_HEADERS.originalTopic);
  const originalPartition = Number(lastHeader(record, CONTEXT_HEADERS.originalPartition));
  const originalOffset = lastHeader(record, CONTEXT_HEADERS.originalOffset);
  const carried = originalTopic !== undefined && Number.isSafeInteger(originalPartition) && originalOffset;
  const context = failureContext({
    error: input.error,
    messageId: input.messageId ?? lastHeader(record, CONTEXT_HEADERS.messageId) ?? brokerId(record),
    consumer: input.consumer,
    retryCount: route.retryCount,
    previousFirstFailedAt: lastHeader(record, CONTEXT_HEADERS.firstFailedAt),
    now,
    originalTopic: carried ? originalTopic : record.topic,
    originalPartition: carried ? originalPartition : record.partition,
    originalOffset: carried ? originalOffset : String(record.offset),
  });
  const headers: KafkaHeader[] = record.headers.filter(
    (h) => !CONTEXT_NAMES.has(h.name) && !isDecodedPartHeader(h.name),
  );
  for (const part of ["key", "value"] as const) {
    const form = input.decoded?.[part];
    if (form) headers.push({ name: DECODED_PART_HEADERS[part], value: decodedPartHeader(form) });
  }
  for (const [name, value] of Object.entries(contextToHeaders(context))) headers.push({ name, value });
  return {
    key: record.keyBytes,
    value: record.valueBytes,
    headers,
    timestamp: now.getTime(),
  };
}
