import type { KafkaMessage } from "kafkajs";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import type { KafkaHeader, OutgoingMessage } from "../kafka/producer.ts";

/** What a replay reads of a dead letter (a `KafkaDeadLetter` is one): where it lay, and the record. */
export interface ReplaySource {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly message: KafkaMessage;
}

/** Headers that describe the failed attempt; a replay starts the ladder afresh without them. */
const ATTEMPT_HEADERS: ReadonlySet<string> = new Set([
  CONTEXT_HEADERS.retryCount,
  CONTEXT_HEADERS.firstFailedAt,
  CONTEXT_HEADERS.lastError,
  CONTEXT_HEADERS.consumer,
]);

/**
 * The record to republish: key, value and the user's headers untouched (every value of a repeated
 * name, in its order; kafkajs reads a record's headers into an object, so the order across names
 * is the object's); `x-message-id` and the
 * `x-original-*` coordinates kept, so consumers deduplicate it as the same message and a new failure
 * still points at the original; the attempt's context dropped, so it starts the retry ladder again;
 * `x-replayed-from` added for tracing.
 */
export function replayMessage(
  letter: ReplaySource,
  now: Date = new Date(),
): OutgoingMessage & { readonly headers: ReadonlyArray<KafkaHeader> } {
  const headers: KafkaHeader[] = [];
  for (const [name, value] of Object.entries(letter.message.headers ?? {})) {
    if (ATTEMPT_HEADERS.has(name) || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.push({ name, value: one });
  }
  headers.push({ name: "x-replayed-from", value: `${letter.topic}:${letter.partition}:${letter.offset}` });
  headers.push({ name: "x-replayed-at", value: now.toISOString() });
  return { key: letter.message.key, value: letter.message.value, headers };
}
