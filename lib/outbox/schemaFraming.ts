import { classifyError, PermanentError } from "../core/errors.ts";
import type { PayloadEncoder } from "../kafka/schemas/encoders.ts";
import { encodeOutboxPayloads, OUTBOX_SCHEMA_HEADER } from "../kafka/schemas/outboxSchemas.ts";
import { PublishFailedError } from "./errors.ts";
import type { OutboxEvent, PublishOutcome } from "./outboxEvent.ts";

export const hasSchemaHeader = (events: ReadonlyArray<OutboxEvent>): boolean =>
  events.some((e) => e.headers[OUTBOX_SCHEMA_HEADER] !== undefined);

/**
 * Encodes the Kafka-bound events that name a schema, in place: `encoded` gets their framed values,
 * `outcomes` the failures, and `byTopic` loses the events that cannot go out now. Once an event of
 * an aggregate cannot go, its later events in this call wait too (`failed`), so none overtakes it.
 */
export async function encodeForKafka(
  byTopic: Map<string, number[]>,
  events: ReadonlyArray<OutboxEvent>,
  outcomes: PublishOutcome[],
  schemas: Readonly<Record<string, PayloadEncoder>> | undefined,
  encoded: WeakMap<OutboxEvent, Buffer | string>,
): Promise<void> {
  for (const [topic, idx] of byTopic) {
    const results = await encodeOutboxPayloads(
      idx.map((i) => events[i]!),
      schemas,
    );
    const blocked = new Set<string>();
    const keep: number[] = [];
    idx.forEach((i, k) => {
      const e = events[i]!;
      const r = results[k]!;
      if (blocked.has(e.aggregateId)) {
        outcomes[i] = {
          status: "failed",
          error: new PublishFailedError("an earlier event of this aggregate could not be encoded"),
        };
        return;
      }
      if (r.ok) {
        encoded.set(e, r.value);
        keep.push(i);
        return;
      }
      blocked.add(e.aggregateId);
      const error = r.error instanceof Error ? r.error : new Error(String(r.error));
      outcomes[i] =
        classifyError(error) === "permanent" && error instanceof PermanentError
          ? { status: "rejected", error }
          : { status: "failed", error };
    });
    if (keep.length > 0) byTopic.set(topic, keep);
    else byTopic.delete(topic);
  }
}
