import type { KafkaMessage } from "kafkajs";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import { DECODED_PART_HEADERS, isDecodedPartHeader, readDecodedPartHeader } from "../kafka/lambdaDecoded.ts";
import type { KafkaHeader, OutgoingMessage } from "../kafka/producer.ts";
import { type RegistryFor, reframePart } from "../kafka/reframe.ts";

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

const bytesOf = (v: string | Buffer | null | undefined): Buffer | null =>
  v === null || v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v, "utf8");

/**
 * A replay framed for the main topic's mapping. A copy of a record that a registry mapping handed
 * over decoded carries that part so (JSON text, or the source bytes without their framing) with
 * `x-value-schema` / `x-key-schema` saying how (lambdaDecoded.ts); the main topic's mapping reads
 * framed bytes only, and would send the replay to its failure destination as a
 * `DESERIALIZATION_ERROR`. Each such part is framed again with its schema id (reframe.ts) and its
 * header dropped: the replay is the record as its producer wrote it. Throws UnencodableValueError
 * for a part that cannot be (no id, a JSON value the schema does not take, no registry for JSON).
 */
export async function reframedForReplay(
  message: OutgoingMessage & { readonly headers: ReadonlyArray<KafkaHeader> },
  registryFor: RegistryFor,
): Promise<OutgoingMessage & { readonly headers: ReadonlyArray<KafkaHeader> }> {
  const formOf = (part: "key" | "value") => {
    const h = message.headers.findLast((x) => x.name === DECODED_PART_HEADERS[part]);
    return readDecodedPartHeader(h === undefined ? undefined : String(h.value));
  };
  const again = async (part: "key" | "value", v: string | Buffer | null | undefined) => {
    const form = formOf(part);
    const bytes = bytesOf(v);
    return form && bytes ? reframePart(bytes, form, registryFor) : (v ?? null);
  };
  return {
    ...message,
    key: await again("key", message.key),
    value: await again("value", message.value),
    headers: message.headers.filter((h) => !isDecodedPartHeader(h.name)),
  };
}
