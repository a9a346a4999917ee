import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { OUTBOX_ENV } from "../env.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import { createOrderCheck } from "./aggregateOrder.ts";
import { positionOf } from "./outboxEvent.ts";
import { type Due, measurePending, queryDue } from "./pendingIndex.ts";
import { createOutboxPublisher, type OutboxPublisher, type OutboxPublisherOptions } from "./publisher.ts";
import { OUTBOX_ATTR as A, OUTBOX_DEFAULTS } from "./schema.ts";
import { clearPendingFenced } from "./settle.ts";
import { decide, parkSlice, publishSlice, type SweepOutcome, type SweepPlan } from "./sweepSlice.ts";

/**
 * The outbox sweeper, run on a schedule (EventBridge, e.g. every minute).
 *
 * Stream records live 24 hours, and the relay's event-source mapping may give up on a batch
 * (MaximumRetryAttempts / MaximumRecordAgeInSeconds). The sweeper is the backstop: it republishes
 * every event still pending after `minAgeMs`, read from the sparse `pending-index` GSI, oldest first,
 * in order per aggregate (an aggregate's events share a GSI shard; ties on `pendingSince` are broken
 * by the time-ordered event id). So no event is lost even when the relay is down for longer than the
 * stream window. It then clears their markers or parks them, like the relay.
 *
 * It also measures the backlog: `OutboxPendingCount` (all pending events, any age) and
 * `OutboxOldestPendingAge` (ms). A rising age means the relay is broken.
 *
 * The sweeper and the relay may both publish an event that is merely late: a duplicate with the
 * same event id. Keep `minAgeMs` well above the relay's normal lag (default 10 minutes).
 */
export interface OutboxSweeperOptions {
  /** The app table whose pending outbox events are swept. */
  readonly tableName: string;
  /** The DynamoDB client for the app table. @default a new DynamoDBClient */
  readonly client?: DynamoDBClient;
  /** The publisher to republish with. @default a publisher built from `publisherOptions` */
  readonly publisher?: OutboxPublisher;
  /** How to build the publisher when `publisher` is not given. @default - the publisher's defaults */
  readonly publisherOptions?: OutboxPublisherOptions;
  /** Republish events pending for longer than this. @default 10 minutes */
  readonly minAgeMs?: number;
  /** The most events republished in one run. @default 1000 */
  readonly maxEvents?: number;
  /** Events published per publish call. @default 100 */
  readonly batchSize?: number;
  /** Must equal the writers' pendingShards. @default 8 */
  readonly pendingShards?: number;
  /** As the relay's (`OutboxRelayOptions.unnumberedEvents`). @default OUTBOX_UNNUMBERED_EVENTS !== "false" (true) */
  readonly unnumberedEvents?: boolean;
  /** Where events that can never be published go, with their context. @default OUTBOX_PARKING_QUEUE_URL */
  readonly parkingQueueUrl?: string;
  /** The client parked events are sent to the parking queue with. @default createSqsClient() */
  readonly sqs?: SQSClient;
  /**
   * Where the sweeper logs and counts (backlog, republished, parked).
   * @default - none: no logs, no metrics
   */
  readonly telemetry?: Telemetry;
  /** The clock, epoch ms (event ages, parking times). @default Date.now */
  readonly now?: () => number;
}

/** What one sweep did, and the backlog after it. */
export interface SweepReport {
  /** Pending events older than minAgeMs that this run looked at. */
  readonly due: number;
  /** Events published again, their `pending` marker then cleared. */
  readonly republished: number;
  /** Events parked: they can never be published as they are. */
  readonly parked: number;
  /**
   * Events left pending for the next run: their publish or parking failed, their order could not
   * be checked, or an earlier event of their aggregate failed.
   */
  readonly failed: number;
  /** Left pending: an older event of their aggregate is still pending or parked (order per aggregate). */
  readonly held: number;
  /** After the run: all pending events, any age. */
  readonly pendingCount: number;
  /** After the run: age of the oldest pending event (0 when none). */
  readonly oldestPendingAgeMs: number;
  /** True when maxEvents or the deadline stopped the run before every due event was tried. */
  readonly truncated: boolean;
}

/** The outbox sweeper: republishes events the relay missed, and measures the backlog. */
export interface OutboxSweeper {
  /** One run. `deadline` (epoch ms) stops it early, e.g. a Lambda's remaining time minus a margin. */
  sweep(options?: { deadline?: number }): Promise<SweepReport>;
  /** Only the backlog metrics (count and oldest age), without republishing. */
  measure(): Promise<{ pendingCount: number; oldestPendingAgeMs: number }>;
}

const bySk = (a: Due, b: Due) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0);

/** Creates the outbox sweeper. */
export function createOutboxSweeper(options: OutboxSweeperOptions): OutboxSweeper {
  const client = options.client ?? new DynamoDBClient({});
  const publisher = options.publisher ?? createOutboxPublisher(options.publisherOptions);
  const { tableName } = options;
  const minAgeMs = options.minAgeMs ?? OUTBOX_DEFAULTS.sweeperMinAgeMs;
  const maxEvents = options.maxEvents ?? 1000;
  const batchSize = options.batchSize ?? 100;
  const shards = options.pendingShards ?? OUTBOX_DEFAULTS.pendingShards;
  const parkingQueueUrl = options.parkingQueueUrl ?? process.env[OUTBOX_ENV.parkingQueueUrl];
  let sqsClient = options.sqs;
  const sqs = () => {
    sqsClient ??= createSqsClient();
    return sqsClient;
  };
  const now = options.now ?? Date.now;
  const telemetry = options.telemetry;

  const measure = () => measurePending(client, tableName, shards, now());
  const parking = { client, tableName, sqs, parkingQueueUrl, telemetry };

  const orderCheck = createOrderCheck(client, tableName, {
    unnumberedEvents: options.unnumberedEvents ?? process.env[OUTBOX_ENV.unnumberedEvents] !== "false",
  });

  /**
   * Per aggregate in its own order (the sequence numbers, else the UUIDv7 sort keys), aggregates
   * oldest first. Order per aggregate (aggregateOrder.ts), the relay's rule: the first due event of
   * an aggregate, and one after a gap among its due events, reads its predecessor; if that is
   * still pending (not due yet, e.g. requeued) or parked, it and the rest of its aggregate wait.
   */
  const planDue = async (cutoff: number): Promise<{ plans: SweepPlan[]; truncated: boolean }> => {
    const perShard = Math.max(1, Math.ceil(maxEvents / shards));
    const results = await Promise.all(
      Array.from({ length: shards }, (_, s) => queryDue(client, tableName, String(s), cutoff, perShard)),
    );
    const due = results.flatMap((r) => r.items).sort((a, b) => a.since - b.since || bySk(a, b));
    const chains = await orderCheck.chains(
      due.map((d) => ({ ref: d, pk: d.item[A.pk]?.S ?? "", sk: d.sk, position: positionOf(d.item) })),
    );
    const oldest = (c: (typeof chains)[number]) => Math.min(...c.events.map((e) => e.ref.since));
    const plans: SweepPlan[] = [];
    for (const chain of chains.sort((a, b) => oldest(a) - oldest(b))) {
      let before: SweepPlan | undefined;
      let blocked: SweepOutcome | undefined;
      chain.events.forEach((e, k) => {
        const gate = chain.gates[k]!;
        if (!blocked && gate.kind === "waiting") blocked = "held";
        if (!blocked && gate.kind === "unknown") blocked = "failed";
        const plan: SweepPlan = { due: e.ref, pk: chain.pk, before };
        if (blocked) plan.outcome = blocked;
        plans.push(plan);
        before = plan;
      });
    }
    return { plans, truncated: results.some((r) => r.more) };
  };

  /** One slice through its stages: decide, publish, park, clear the published markers. */
  const sweepSlice = async (slice: ReadonlyArray<SweepPlan>) => {
    await publishSlice(decide(slice), publisher, telemetry);
    const settledAt = now();
    await parkSlice(slice, settledAt, parking);
    const published = slice.filter((p) => p.outcome === "republished").map((p) => p.due.item);
    const cleared = await clearPendingFenced(client, tableName, published, "sweeper", settledAt);
    if (cleared.failed && telemetry) telemetry.count(METRIC.outboxMarkFailures, cleared.failed);
  };

  const report = async (plans: ReadonlyArray<SweepPlan>, truncated: boolean): Promise<SweepReport> => {
    const count = (o: SweepOutcome) => plans.filter((p) => p.outcome === o).length;
    const counts = {
      republished: count("republished"),
      parked: count("parked"),
      failed: count("failed"),
      held: count("held"),
    };
    const backlog = await measure();
    if (telemetry) {
      telemetry.count(METRIC.outboxPending, backlog.pendingCount);
      telemetry.count(METRIC.outboxOldestAgeMs, backlog.oldestPendingAgeMs);
      if (counts.republished) telemetry.count(METRIC.outboxRepublished, counts.republished);
      if (counts.parked) telemetry.count(METRIC.outboxParked, counts.parked);
      if (counts.failed) telemetry.count(METRIC.outboxPublishFailures, counts.failed);
      if (counts.held) telemetry.count(METRIC.outboxDeferred, counts.held);
    }
    return { due: plans.length, ...counts, ...backlog, truncated };
  };

  return {
    measure,
    async sweep({ deadline } = {}) {
      const { plans, truncated } = await planDue(now() - minAgeMs);
      const open = plans.filter((p) => p.outcome === undefined);
      let stopped = false;
      for (let i = 0; i < open.length; i += batchSize) {
        if (deadline !== undefined && now() >= deadline) {
          stopped = true;
          break;
        }
        await sweepSlice(open.slice(i, i + batchSize));
      }
      return report(plans, truncated || stopped);
    },
  };
}
