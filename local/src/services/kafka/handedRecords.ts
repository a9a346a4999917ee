/**
 * The records of one fetch the function is handed, and in what form. Without a schema registry,
 * all of them as polled. With one (`SchemaRegistryConfig`, schemaRegistry.ts), those whose
 * validated parts deserialize, as the registry made them (`HandedRecords`); the others go to the
 * on-failure destination first, with Lambda's reason code, before anything later is committed. Then
 * the mapping's filters, over each record as the function would see it.
 */
import type { KafkaMessage } from "kafkajs";
import { filterView, matchesAnyFilter } from "../lambda/eventFilter.ts";
import type { DiscardCondition } from "../lambda/failureDestination.ts";
import type { Discard } from "./failureSink.ts";
import { retryHolding } from "./retryHolding.ts";
import type { DeserializedRecord, MappingDeserializer } from "./schemaRegistry.ts";

/** A record as the registry hands it over: its parts in the mapping's format, its schema metadata. */
export type HandedRecord = Extract<DeserializedRecord, { ok: true }>;

/** What the registry made of each record it hands over, by message object (one fetch's at a time). */
export type HandedRecords = WeakMap<KafkaMessage, HandedRecord>;

/** What deserializing a fetch needs. */
export interface DeserializeFetchOptions {
  /** The mapping's deserializer; without one every record is handed over as polled. */
  readonly deserializer: MappingDeserializer | undefined;
  /** Where each handed-over record's deserialized form is put. */
  readonly handed: HandedRecords;
  /** The mapping's logical id, for the warning of a registry that cannot answer. */
  readonly logicalId: string;
  readonly discard: Discard;
  pause(ms: number): Promise<void>;
}

/**
 * The records of a fetch of `topic`-`partition` the function may see. A registry that cannot
 * answer holds the partition until it does; `undefined` when the mapping stopped or the partition
 * was revoked meanwhile (`revoked`), or the destination did not take the refused records.
 */
export async function deserializeFetch(
  topic: string,
  partition: number,
  messages: KafkaMessage[],
  revoked: () => boolean,
  options: DeserializeFetchOptions,
): Promise<KafkaMessage[] | undefined> {
  const { deserializer } = options;
  if (!deserializer) return messages;
  const out: KafkaMessage[] = [];
  const refused = new Map<DiscardCondition, KafkaMessage[]>();
  for (const m of messages) {
    const d = await retryHolding(() => deserializer.deserialize(m), {
      stopped: revoked,
      pause: options.pause,
      refused: (error) =>
        process.emitWarning(
          `${options.logicalId}: schema registry unavailable, holding ${topic}-${partition}: ${error.message}`,
        ),
    });
    if (!d.done) return undefined;
    if (d.value.ok) {
      options.handed.set(m, d.value);
      out.push(m);
    } else refused.set(d.value.condition, [...(refused.get(d.value.condition) ?? []), m]);
  }
  for (const [condition, list] of refused)
    if (!(await options.discard(topic, partition, list, condition, 0))) return undefined;
  return out;
}

/** A record in the MSK event's JSON, for filtering: `value` decoded and parsed when it is JSON. */
export function filterRecord(topic: string, partition: number, m: KafkaMessage): Record<string, unknown> {
  return {
    topic,
    partition,
    offset: Number(m.offset),
    timestamp: Number(m.timestamp),
    timestampType: "CREATE_TIME",
    ...(m.key ? { key: m.key.toString("base64") } : {}),
    ...(m.value ? { value: filterView(m.value.toString("utf8")) } : {}),
  };
}

/**
 * The records that match one of `filters` (none: all match), each seen as the function would get
 * it (`handed`, else as polled); `filtered` counts the others, which are skipped and committed.
 */
export function filterFetch(
  filters: readonly unknown[],
  topic: string,
  partition: number,
  messages: readonly KafkaMessage[],
  handed: HandedRecords,
): { pass: KafkaMessage[]; filtered: number } {
  const pass: KafkaMessage[] = [];
  let filtered = 0;
  for (const m of messages) {
    const seen = handed.get(m)?.message ?? m;
    if (matchesAnyFilter(filters, filterRecord(topic, partition, seen))) pass.push(m);
    else filtered++;
  }
  return { pass, filtered };
}
