/**
 * Where each event of a publish goes: its destination (`kafka:<topic>`, `sqs:<queue url>`, or a
 * configured route name) resolved, and the events grouped by Kafka topic and by queue. An event
 * whose destination resolves to nothing is rejected (parked), with the later events of its
 * aggregate held behind it.
 */
import { UnknownDestinationError } from "./errors.ts";
import type { OutboxEvent, PublishOutcome } from "./outboxEvent.ts";
import { aggregateOf, behindEarlier } from "./publishOutcomes.ts";

/** Where an event goes: a Kafka topic, or an SQS queue (FIFO when its URL ends in `.fifo`). */
export type Target =
  | { readonly kind: "kafka"; readonly topic: string }
  | { readonly kind: "sqs"; readonly queueUrl: string; readonly fifo: boolean };

/** `kafka:<topic>`, `sqs:<queue url>`, or a route name that maps to one of those. */
export function parseDestination(
  destination: string,
  routes: Readonly<Record<string, string>> = {},
): Target | undefined {
  const resolved = routes[destination] ?? destination;
  const colon = resolved.indexOf(":");
  if (colon < 0) return undefined;
  const scheme = resolved.slice(0, colon);
  const rest = resolved.slice(colon + 1).replace(/^\/\//, "");
  if (rest === "") return undefined;
  if (scheme === "kafka") return { kind: "kafka", topic: rest };
  if (scheme === "sqs") return { kind: "sqs", queueUrl: rest, fifo: rest.endsWith(".fifo") };
  return undefined;
}

/** The indexes (into the publish call's events) bound for each Kafka topic and each queue, in call order. */
export interface DestinationGroups {
  readonly kafkaTopics: Map<string, number[]>;
  readonly queues: Map<string, { target: Extract<Target, { kind: "sqs" }>; idx: number[] }>;
}

/** Groups `events` by destination; sets `outcomes` of the events that cannot go (unknown destination, held back). */
export function groupByDestination(
  events: ReadonlyArray<OutboxEvent>,
  routes: Readonly<Record<string, string>>,
  outcomes: PublishOutcome[],
): DestinationGroups {
  const kafkaTopics = new Map<string, number[]>();
  const queues = new Map<string, { target: Extract<Target, { kind: "sqs" }>; idx: number[] }>();
  const rejectedAggregates = new Set<string>();
  events.forEach((e, i) => {
    const target = parseDestination(e.destination, routes);
    if (rejectedAggregates.has(aggregateOf(e))) {
      // An earlier event of this aggregate is parked: this one must not overtake it.
      outcomes[i] = behindEarlier();
    } else if (!target) {
      rejectedAggregates.add(aggregateOf(e));
      outcomes[i] = {
        status: "rejected",
        error: new UnknownDestinationError(
          `event ${e.eventId}: destination '${e.destination}' is neither kafka:<topic>, sqs:<queue url> nor a configured route`,
        ),
      };
    } else if (target.kind === "kafka") {
      const list = kafkaTopics.get(target.topic) ?? [];
      list.push(i);
      kafkaTopics.set(target.topic, list);
    } else {
      const q = queues.get(target.queueUrl) ?? { target, idx: [] };
      q.idx.push(i);
      queues.set(target.queueUrl, q);
    }
  });
  return { kafkaTopics, queues };
}
