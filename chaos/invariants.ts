import type { Message } from "@aws-sdk/client-sqs";
import { readLambdaFailureRecord } from "reliable-consumers/dlq";
import type { ChaosService } from "./chaosService.ts";
import type { ChargeCall } from "./paymentProvider.ts";
import { readQueue, readTopic, scanTable, type TopicRecord } from "./storedState.ts";

/**
 * The invariants of the reference service, checked on stored data only: the app table, the
 * dedup table's neighbours, the queues, the topics and the payment provider's ledger.
 */
export const CHAOS_ID = "chaos-id";

export type Expectation =
  /** A valid order: ORDER + inbox marker + one OrderPlaced, published, charged (once). */
  | { readonly kind: "good"; readonly orderId: string }
  /** Poison for the SQS consumer (bad JSON, wrong schema, no id...): parked in the orders DLQ. */
  | { readonly kind: "sqs-poison"; readonly errorType: string }
  /** A valid order the payment provider declines: in the app table, then on the Kafka DLQ. */
  | { readonly kind: "declined"; readonly orderId: string }
  /**
   * A valid order whose charge kills the payment environment, every time (a record that crashes
   * its function, as by running out of memory): in the app table, then on the Kafka DLQ, put there
   * by Lambda's on-failure destination (or by the consumer), never charged.
   */
  | { readonly kind: "crasher"; readonly orderId: string };

/**
 * What every scenario reports. A figure a scenario does not measure is `null` ("not measured"),
 * never a constant that reads like a result: the verdict skips a null, and a reader sees it.
 */
export interface CheckFigures {
  lost: number;
  /** On the transactional path (inbox + order + outbox in one transaction): must be 0. null: no such path in the scenario. */
  duplicateEffects: number | null;
  dlq: number;
  /** Every bad input parked with its typed error, and nothing good parked. null: the scenario sends no bad input. */
  poisonParkedCorrectly: boolean | null;
  /**
   * Aggregates whose outbox events reached the topic out of commit order (first occurrences,
   * compared with the event ids' order in the app table): must be 0. null: the scenario moves no
   * outbox events.
   */
  aggregatesOutOfOrder: number | null;
  [extra: string]: unknown;
}

export interface ScenarioFigures extends CheckFigures {
  messages: number;
  faultsInjected: number;
}

export interface PipelineCheck {
  /** All measured: the pipeline has a transactional path, bad input and outbox events. */
  readonly figures: CheckFigures & {
    duplicateEffects: number;
    poisonParkedCorrectly: boolean;
    aggregatesOutOfOrder: number;
  };
  readonly details: {
    readonly halfApplied: string[];
    readonly lostIds: string[];
    readonly misparked: string[];
    readonly outOfOrder: string[];
    readonly pendingOutbox: number;
    readonly leaseGuardedDuplicates: number;
    readonly unaccountedDuplicates: string[];
    readonly crashesAfterEffect: number;
    readonly redeliveredEvents: number;
  };
}

interface ParkedContext {
  "x-last-error"?: string;
  "x-consumer"?: string;
  "x-message-id"?: string;
  "x-original-queue"?: string;
  "x-original-topic"?: string;
  "x-original-partition"?: string;
  "x-original-offset"?: string;
}

/** The failure context and the user's attributes, whether packed side by side or folded (lib/core/attributePacking.ts). */
function unpack(m: Message): {
  context: ParkedContext | undefined;
  attributes: Record<string, { StringValue?: string }>;
} {
  const folded = m.MessageAttributes?.["x-folded-attributes"]?.StringValue;
  if (folded) {
    const f = JSON.parse(folded) as {
      attributes: Record<string, { StringValue?: string }>;
      context: ParkedContext;
    };
    return { context: f.context, attributes: f.attributes };
  }
  const raw = m.MessageAttributes?.["x-failure-context"]?.StringValue;
  return {
    context: raw ? (JSON.parse(raw) as ParkedContext) : undefined,
    attributes: (m.MessageAttributes ?? {}) as Record<string, { StringValue?: string }>,
  };
}

const sqsContext = (m: Message) => unpack(m).context;
/** The failure context of a parked SQS message (undefined for one that carries none, as Lambda's on-failure records). */
export const parkedContextOf = (m: Message): ParkedContext | undefined => unpack(m).context;
const chaosIdOf = (m: Message) => unpack(m).attributes[CHAOS_ID]?.StringValue;

/**
 * Per aggregate, whether the first occurrence of each of its events on the topic follows the order
 * of the event ids (UUIDv7: creation order) in the app table. Returns the aggregates out of order.
 */
export function aggregatesOutOfOrder(
  eventsByAggregate: ReadonlyMap<string, readonly string[]>,
  records: readonly TopicRecord[],
): string[] {
  const rank = new Map<string, { aggregate: string; at: number }>();
  for (const [aggregate, ids] of eventsByAggregate) {
    [...ids].sort().forEach((id, at) => {
      rank.set(id, { aggregate, at });
    });
  }
  const last = new Map<string, number>();
  const seen = new Set<string>();
  const out = new Set<string>();
  for (const r of records) {
    const id = r.headers["message-id"] ?? "";
    if (seen.has(id)) continue;
    seen.add(id);
    const x = rank.get(id);
    if (!x) continue;
    if ((last.get(x.aggregate) ?? -1) > x.at) out.add(x.aggregate);
    last.set(x.aggregate, Math.max(last.get(x.aggregate) ?? -1, x.at));
  }
  return [...out];
}

/** The order figures of the reference service's outbox: events per order, on the main topic. */
export async function outboxOrderOnTopic(
  service: ChaosService,
): Promise<{ duplicateEffects: number; outOfOrder: string[] }> {
  const items = await scanTable(service.dynamodb, service.names.appTable);
  const events = eventsOfOrders(items);
  const records = await readTopic(service.kafka, service.names.topic);
  let duplicateEffects = 0;
  for (const ids of events.values()) duplicateEffects += Math.max(0, ids.length - 1);
  return { duplicateEffects, outOfOrder: aggregatesOutOfOrder(events, records) };
}

function eventsOfOrders(items: ReadonlyArray<Record<string, { S?: string }>>): Map<string, string[]> {
  const events = new Map<string, string[]>();
  for (const i of items) {
    const pk = i.pk?.S ?? "";
    if (!pk.startsWith("OUTBOX#order#") || !(i.sk?.S ?? "").startsWith("EVENT#")) continue;
    const id = pk.slice("OUTBOX#order#".length);
    events.set(id, [...(events.get(id) ?? []), i.eventId?.S ?? ""]);
  }
  return events;
}

function orderIdOf(r: TopicRecord): string | undefined {
  try {
    return (JSON.parse(r.value ?? "") as { orderId?: string }).orderId;
  } catch {
    return undefined;
  }
}

/** A dead letter of the DLQ topic, by order id: the consumer's (the record), or Lambda's (its failure document). */
export interface DeadLetteredOrder {
  readonly record: TopicRecord;
  readonly writtenBy: "consumer" | "lambda";
  /** The record's headers: the DLQ record's, or for Lambda's the original record's inside. */
  readonly headers: Readonly<Record<string, string>>;
}

export function deadLetteredOrders(records: readonly TopicRecord[]): Map<string, DeadLetteredOrder> {
  const out = new Map<string, DeadLetteredOrder>();
  for (const r of records) {
    const lambda = readLambdaFailureRecord(r.value === undefined ? null : Buffer.from(r.value));
    if (!lambda) {
      const id = orderIdOf(r);
      if (id) out.set(id, { record: r, writtenBy: "consumer", headers: r.headers });
      continue;
    }
    for (const inner of lambda.records) {
      const id = orderIdOf({ ...r, value: inner.value?.toString() });
      const headers = Object.fromEntries(
        Object.entries(inner.headers).map(([k, v]) => [k, String(Array.isArray(v) ? v[0] : v)]),
      );
      if (id) out.set(id, { record: r, writtenBy: "lambda", headers });
    }
  }
  return out;
}

/**
 * Checks the whole pipeline once it is quiet. `expected` maps each sent message's chaos id to
 * what must have become of it.
 */
export async function checkPipeline(
  service: ChaosService,
  expected: ReadonlyMap<string, Expectation>,
  options: { paymentsRan?: boolean } = {},
): Promise<PipelineCheck> {
  const paymentsRan = options.paymentsRan ?? true;
  const n = service.names;
  const items = await scanTable(service.dynamodb, n.appTable);
  const orders = new Map<string, number>();
  const markers = new Set<string>();
  const events = new Map<string, string[]>();
  let pendingOutbox = 0;
  for (const i of items) {
    const pk = i.pk?.S ?? "";
    if (pk.startsWith("ORDER#")) orders.set(pk.slice(6), (orders.get(pk.slice(6)) ?? 0) + 1);
    else if (pk.startsWith("INBOX#order-consumer#")) markers.add(pk.slice("INBOX#order-consumer#".length));
    else if (pk.startsWith("OUTBOX#order#") && (i.sk?.S ?? "").startsWith("EVENT#")) {
      const id = pk.slice("OUTBOX#order#".length);
      events.set(id, [...(events.get(id) ?? []), i.eventId?.S ?? ""]);
      if (i.pending !== undefined) pendingOutbox++;
    }
  }
  const [ordersDlq, parking, topicRecords, deadLetters] = await Promise.all([
    readQueue(service.sqs, n.ordersDlqUrl),
    readQueue(service.sqs, n.parkingUrl),
    readTopic(service.kafka, n.topic),
    readTopic(service.kafka, n.deadLetterTopic),
  ]);
  const ledger: ChargeCall[] = service.provider.readLedger();
  const crashLog = service.provider.readCrashes();

  const halfApplied: string[] = [];
  const ids = new Set([...orders.keys(), ...markers, ...events.keys()]);
  let duplicateEffects = 0;
  for (const id of ids) {
    const o = orders.get(id) ?? 0;
    const e = events.get(id)?.length ?? 0;
    if (o !== 1 || !markers.has(id) || e < 1) halfApplied.push(id);
    if (e > 1) duplicateEffects += e - 1;
  }

  const publishedIds = new Map<string, number>();
  for (const r of topicRecords) {
    const id = r.headers["message-id"] ?? "";
    publishedIds.set(id, (publishedIds.get(id) ?? 0) + 1);
  }
  const redeliveredEvents = [...publishedIds.values()].reduce((s, c) => s + c - 1, 0);
  const deadLettered = deadLetteredOrders(deadLetters);
  const charges = new Map<string, ChargeCall[]>();
  for (const c of ledger) charges.set(c.orderId, [...(charges.get(c.orderId) ?? []), c]);
  const parkedByChaosId = new Map<string, Message>();
  for (const m of ordersDlq) {
    const id = chaosIdOf(m);
    if (id) parkedByChaosId.set(id, m);
  }

  const lostIds: string[] = [];
  const misparked: string[] = [];
  let leaseGuardedDuplicates = 0;
  let crashesAfterEffect = 0;
  const unaccountedDuplicates: string[] = [];
  for (const [chaosId, exp] of expected) {
    const parked = parkedByChaosId.get(chaosId);
    if (exp.kind === "sqs-poison") {
      if (!parked) {
        lostIds.push(chaosId);
        continue;
      }
      const ctx = sqsContext(parked);
      const type = ctx?.["x-last-error"]?.split(":")[0];
      if (type !== exp.errorType || !ctx?.["x-consumer"] || !ctx["x-original-queue"]) {
        misparked.push(`${chaosId}: ${type ?? "no context"} (expected ${exp.errorType})`);
      }
      continue;
    }
    const id = exp.orderId;
    if (parked) {
      // A valid order must never be dead-lettered by the SQS consumer.
      misparked.push(
        `${chaosId}: good order ${id} in the orders DLQ (${sqsContext(parked)?.["x-last-error"]})`,
      );
      continue;
    }
    const eventIds = events.get(id) ?? [];
    const published = eventIds.some((e) => publishedIds.has(e));
    if (!orders.has(id) || eventIds.length === 0 || !published) {
      lostIds.push(
        `${chaosId}:${id}${!orders.has(id) ? " (no order)" : !published ? " (not published)" : ""}`,
      );
      continue;
    }
    if (!paymentsRan) continue;
    const calls = charges.get(id) ?? [];
    const charged = calls.filter((c) => c.outcome === "charged");
    if (exp.kind === "declined") {
      const dl = deadLettered.get(id);
      if (!dl) lostIds.push(`${chaosId}:${id} (declined, not on the DLQ topic)`);
      else if (
        !dl.headers["x-last-error"]?.startsWith("PaymentDeclinedError") ||
        !dl.headers["x-original-topic"]
      )
        misparked.push(`${chaosId}: ${id} on the DLQ topic without its context`);
      continue;
    }
    if (exp.kind === "crasher") {
      // It kills its environment before every charge: isolated on the DLQ topic, its partition freed.
      if (!deadLettered.has(id)) lostIds.push(`${chaosId}:${id} (kills its function; not on the DLQ topic)`);
      if (charged.length > 0) misparked.push(`${chaosId}: ${id} kills its function, yet was charged`);
      continue;
    }
    if (charged.length === 0) {
      const dl = deadLettered.get(id);
      if (dl)
        misparked.push(
          `${chaosId}: good order ${id} on the DLQ topic (${dl.writtenBy === "lambda" ? "by Lambda's on-failure destination" : dl.headers["x-last-error"]})`,
        );
      else lostIds.push(`${chaosId}:${id} (never charged)`);
      continue;
    }
    // Lease-guarded external effect: every repeat must follow a crash after an earlier charge.
    crashesAfterEffect += calls.filter((c) => c.crashAfter).length;
    const repeats = charged.length - 1;
    leaseGuardedDuplicates += repeats;
    // Charge k (k ≥ 1) is accounted for only if the environment that made charge k-1 was crashed
    // after it (before it could complete the dedup record).
    for (let k = 1; k < charged.length; k++) {
      const prev = charged[k - 1]!;
      // (A charge that reached the provider just after the kill was issued still came from before
      // the environment died: only "crashed before the repeat" is required.)
      const callers = prev.callers;
      const explained = crashLog.some((c) => callers.includes(c.environment) && c.at <= charged[k]!.at);
      if (!explained) {
        unaccountedDuplicates.push(
          `${id}: charge #${k + 1} without a crash of environment ${callers.join("/") || "?"} after charge #${k}`,
        );
        break;
      }
    }
  }
  const dlq = ordersDlq.length + parking.length + deadLetters.length;
  const outOfOrder = aggregatesOutOfOrder(events, topicRecords);
  return {
    figures: {
      lost: lostIds.length,
      duplicateEffects,
      dlq,
      poisonParkedCorrectly: misparked.length === 0,
      aggregatesOutOfOrder: outOfOrder.length,
      halfApplied: halfApplied.length,
      leaseGuardedDuplicates,
      unaccountedDuplicates: unaccountedDuplicates.length,
    },
    details: {
      halfApplied,
      lostIds,
      misparked,
      outOfOrder,
      pendingOutbox,
      leaseGuardedDuplicates,
      unaccountedDuplicates,
      crashesAfterEffect,
      redeliveredEvents,
    },
  };
}
