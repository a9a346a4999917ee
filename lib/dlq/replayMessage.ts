import type { KafkaMessage } from "kafkajs";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import type { OutgoingMessage } from "../kafka/producer.ts";

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
 * The record to republish: key, value and the user's headers untouched; `x-message-id` and the
 * `x-original-*` coordinates kept, so consumers deduplicate it as the same message and a new failure
 * still points at the original; the attempt's context dropped, so it starts the retry ladder again;
 * `x-replayed-from` added for tracing.
 */
export function replayMessage(letter: ReplaySource, now: Date = new Date()): OutgoingMessage {
  const headers: Record<string, string | Buffer> = {};
  for (const [name, value] of Object.entries(letter.message.headers ?? {})) {
    if (ATTEMPT_HEADERS.has(name) || value === undefined) continue;
    const one = Array.isArray(value) ? value[value.length - 1] : value;
    if (one !== undefined) headers[name] = one;
  }
  headers["x-replayed-from"] = `${letter.topic}:${letter.partition}:${letter.offset}`;
  headers["x-replayed-at"] = now.toISOString();
  return { key: letter.message.key, value: letter.message.value, headers };
}
