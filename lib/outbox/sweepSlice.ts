/**
 * One slice of the sweeper's due events through its stages: decide (an aggregate's event after one
 * that failed or is parked waits), publish, park what can never be published.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { describeError } from "../core/errors.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import { type OutboxEvent, parseOutboxItem } from "./outboxEvent.ts";
import type { Due } from "./pendingIndex.ts";
import type { OutboxPublisher } from "./publisher.ts";
import { OUTBOX_ATTR as A } from "./schema.ts";
import { park } from "./settle.ts";

export type SweepOutcome = "republished" | "parked" | "failed" | "held";

/**
 * One due event through the sweep's stages (order check, publish, park, clear), instead of
 * counters and a map of blocked aggregates beside the list.
 */
export interface SweepPlan {
  readonly due: Due;
  readonly pk: string;
  /** The aggregate's previous due event in this run: it goes first, or this one waits. */
  readonly before: SweepPlan | undefined;
  outcome?: SweepOutcome;
  /** What this event means for the aggregate's later events in this run: they wait, or fail with it. */
  blocks?: "held" | "failed";
  /** Set when this event is to be parked, with why. */
  park?: { readonly error: unknown; readonly eventId: string | undefined };
}

type Decided = ReadonlyArray<{ plan: SweepPlan; event: OutboxEvent }>;

/** A slice: the events to publish (an aggregate's event after one that failed or is parked waits). */
export function decide(slice: ReadonlyArray<SweepPlan>): Decided {
  const events: Array<{ plan: SweepPlan; event: OutboxEvent }> = [];
  for (const plan of slice) {
    const blocked = plan.before?.blocks;
    if (blocked) {
      plan.outcome = blocked;
      plan.blocks = blocked;
      continue;
    }
    try {
      events.push({ plan, event: parseOutboxItem(plan.due.item) });
    } catch (error) {
      plan.park = { error, eventId: plan.due.item[A.eventId]?.S };
      plan.blocks = "held";
    }
  }
  return events;
}

/** Publishes the decided events: a rejected one is to be parked, a failed one holds its aggregate's rest. */
export async function publishSlice(
  events: Decided,
  publisher: OutboxPublisher,
  telemetry: Telemetry | undefined,
): Promise<void> {
  const outcomes = await publisher.publish(events.map((e) => e.event));
  outcomes.forEach((o, n) => {
    const { plan, event } = events[n]!;
    if (o.status === "published") plan.outcome = "republished";
    else if (o.status === "rejected") {
      plan.park = { error: o.error, eventId: event.eventId };
      plan.blocks = "held";
    } else if (plan.before?.blocks === "held") {
      plan.outcome = plan.blocks = "held"; // behind an earlier event of its aggregate that this run parks
    } else {
      plan.outcome = plan.blocks = "failed";
      telemetry?.logger.warn("sweeper: republish failed; next run retries", {
        eventId: event.eventId,
        error: describeError(o.error),
      });
    }
  });
}

/** Where parked events go, and who reports a failed parking. */
export interface SweepParking {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly sqs: () => SQSClient;
  readonly parkingQueueUrl: string | undefined;
  readonly telemetry: Telemetry | undefined;
}

/** Parks the slice's events that can never be published; a failed parking fails the event (next run). */
export async function parkSlice(
  slice: ReadonlyArray<SweepPlan>,
  settledAt: number,
  p: SweepParking,
): Promise<void> {
  for (const plan of slice) {
    if (!plan.park) continue;
    const { item } = plan.due;
    try {
      await park(
        {
          key: { pk: plan.pk, sk: item[A.sk]?.S ?? "" },
          image: item,
          eventId: plan.park.eventId,
          error: plan.park.error,
          source: `sweeper:${p.tableName}`,
          consumer: "outbox-sweeper",
        },
        {
          client: p.client,
          tableName: p.tableName,
          sqs: p.sqs,
          parkingQueueUrl: p.parkingQueueUrl,
          now: settledAt,
        },
      );
      plan.outcome = "parked";
    } catch (error) {
      plan.outcome = "failed";
      p.telemetry?.logger.error("sweeper: parking failed; next run retries", {
        eventId: plan.park.eventId,
        error: describeError(error),
      });
    }
  }
}
