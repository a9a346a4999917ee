/**
 * The publisher's Kafka side: every topic's events in one produce request (key = aggregate id, so
 * an aggregate's events share a partition and keep their order), registry-framed first when an
 * event names a schema. A request the cluster rejects for good is retried record by record, to
 * isolate the poison record, which alone is rejected.
 */
import type { KafkaProducer, OutgoingMessage } from "../kafka/producer.ts";
import { KafkaPublishPermanentError } from "../kafka/publishErrors.ts";
import type { PayloadEncoder } from "../kafka/schemas/encoders.ts";
import { PublishFailedError } from "./errors.ts";
import { type OutboxEvent, type PublishOutcome, publishedHeaders } from "./outboxEvent.ts";
import { aggregateOf, asOutcome, behindEarlier } from "./publishOutcomes.ts";
import { encodeForKafka, hasSchemaHeader } from "./schemaFraming.ts";

/** What the Kafka side needs of its publisher. */
export interface KafkaPublishDeps {
  /** The producer; throws when Kafka is not configured. */
  readonly kafka: () => KafkaProducer;
  /** Schema name → encoder, for events that name a schema. */
  readonly schemas: Readonly<Record<string, PayloadEncoder>> | undefined;
  /** The registry-framed values of the events being published (`encodeForKafka` fills it). */
  readonly encoded: WeakMap<OutboxEvent, Buffer | string>;
  /** The publisher's call counters. */
  readonly calls: { kafkaSend: number };
}

function toKafkaMessage(e: OutboxEvent, encoded: KafkaPublishDeps["encoded"]): OutgoingMessage {
  return {
    key: e.aggregateId,
    value: encoded.get(e) ?? e.payload,
    headers: publishedHeaders(e),
    timestamp: e.createdAt,
  };
}

/** Publishes the events of `byTopic` (indexes into `events`); sets their `outcomes`. */
export async function publishKafka(
  deps: KafkaPublishDeps,
  byTopic: Map<string, number[]>,
  events: ReadonlyArray<OutboxEvent>,
  outcomes: PublishOutcome[],
): Promise<void> {
  const { calls, encoded } = deps;
  if (deps.schemas || hasSchemaHeader(events)) {
    // Serialize with the registry's framing first; an event that cannot be encoded is rejected
    // (permanent) or failed (registry unreachable), and later events of its aggregate wait.
    await encodeForKafka(byTopic, events, outcomes, deps.schemas, encoded);
  }
  const all = [...byTopic.values()].flat();
  if (all.length === 0) return;
  let producer: KafkaProducer;
  try {
    producer = deps.kafka();
  } catch (error) {
    // Not configured (no KAFKA_BROKERS): the deployment's fault, not the events'. Retry, do not park.
    const e = new PublishFailedError(`no Kafka producer: ${(error as Error).message}`, { cause: error });
    for (const i of all) outcomes[i] = { status: "failed", error: e };
    return;
  }
  try {
    calls.kafkaSend++;
    await producer.sendBatch(
      [...byTopic].map(([topic, idx]) => ({
        topic,
        messages: idx.map((i) => toKafkaMessage(events[i]!, encoded)),
      })),
    );
    for (const i of all) outcomes[i] = { status: "published" };
    return;
  } catch (error) {
    if (!(error instanceof KafkaPublishPermanentError) || all.length === 1) {
      for (const i of all) outcomes[i] = asOutcome(error);
      return;
    }
  }
  // A permanent rejection of a multi-record request: find the poison record(s) one by one, in
  // order, stopping an aggregate at its first failure or rejection so nothing overtakes it.
  const blocked = new Set<string>();
  for (const [topic, idx] of byTopic) {
    for (const i of idx) {
      const e = events[i]!;
      const lane = aggregateOf(e);
      if (blocked.has(lane)) {
        outcomes[i] = behindEarlier();
        continue;
      }
      try {
        calls.kafkaSend++;
        await producer.send(topic, [toKafkaMessage(e, encoded)]);
        outcomes[i] = { status: "published" };
      } catch (error) {
        outcomes[i] = asOutcome(error);
        // Failed (retried later) or rejected (parked): either way the aggregate's later events wait.
        blocked.add(lane);
      }
    }
  }
}
