/**
 * The batch runner both consumers are adapters of. It owns the stage order, once:
 *
 *   decode → plan (in-batch copies) → bad input up front (SQS) → claim ahead → run (keyed lanes,
 *   bounded concurrency, the time margin, until the cut-off at the latest) → release unused claims
 *   → settle completions → after run (SQS: requeue; Kafka: produce) → record the routes (Kafka) →
 *   answer
 *
 * with the `finally` (watchers stopped; the deadline timers cleared once answered), the deadlines
 * (`lambdaDeadline.ts`: everything after the run has its own reserve of Lambda time, and ends by the
 * settlement deadline) and the telemetry of each stage. An adapter supplies only what differs (`BatchAdapter`). Per-invocation
 * state lives in the plans and in the adapter, both built per call: nothing is shared between
 * concurrent invocations.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Context } from "aws-lambda";
import { readConsumerEnv } from "../core/consumerEnv.ts";
import type { Envelope } from "../core/envelope.ts";
import { describeError, LeaseLostError } from "../core/errors.ts";
import {
  createIdempotency,
  type DuplicateHandler,
  type Idempotency,
  type IdempotencySetting,
} from "../dedup/idempotency.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { decodeRecords, planBatch, type RecordPlan } from "./batchPlan.ts";
import { beforeDeadline, type Timer } from "./lambdaDeadline.ts";
import { claimAhead, releaseUnused, settleCompletions, settleLeases } from "./recordClaims.ts";
import type { RecordOutcome } from "./recordOutcome.ts";
import { type Invocation, openInvocation } from "./recordRun.ts";
import { recordRunner, runUntilCutOff } from "./runPhase.ts";

/** What a handler gets beside the envelope: the same three things in every consumer. */
export interface BatchRecordContext<R> {
  readonly context: Context;
  readonly record: R;
  /** Aborts when this record's lease is lost to another consumer, or the Lambda runs out of time. */
  readonly signal: AbortSignal;
}

/** Watches the records that will run while they run (SQS: the visibility heartbeat). */
export interface RunWatch<P> {
  /** Before the run, with every record that will start (not settled up front, not an in-batch copy). */
  start(plans: ReadonlyArray<P>): void;
  /** When a record's run has ended, whatever its outcome. */
  finished(plan: P): void;
  /** In the runner's `finally`, before the answer. */
  stop(): Promise<void>;
}

/** What one trigger does differently; everything else is `runBatch`'s. */
export interface BatchAdapter<R, T, E extends Envelope<T>, A> {
  /** Reads one record into its envelope, once per record; a throw is bad input (`reject`). */
  readonly decode: (record: R) => Promise<E>;
  /** Records of one lane run one after another in batch order; `undefined` is a lane of its own. */
  readonly laneOf: (plan: RecordPlan<R, T, E>) => string | undefined;
  /** Where a failed record goes; `retryAtMs` is when another holder's lease of its key ends. */
  readonly fail: (
    plan: RecordPlan<R, T, E>,
    error: unknown,
    retryAtMs?: number,
  ) => RecordOutcome | Promise<RecordOutcome>;
  /** Where a record that could not be decoded goes. */
  readonly reject: (plan: RecordPlan<R, T, E>, error: unknown) => RecordOutcome | Promise<RecordOutcome>;
  /**
   * `true`: bad input is settled before any record waits for a slot (SQS). Otherwise in its lane's
   * turn (Kafka, so that a bad record behind its key's retry path follows it there).
   */
  readonly rejectUpFront?: boolean;
  /** First in a record's turn, before any claim (Kafka: skip a tombstone). */
  readonly lead?: (plan: RecordPlan<R, T, E>) => RecordOutcome | undefined;
  /** After the record's claim, before its effect (Kafka: follow its key's retry path). */
  readonly follow?: (plan: RecordPlan<R, T, E>) => RecordOutcome | undefined;
  /**
   * Where a routed record went, once its copy is durable (after `afterRun`); recorded in its dedup
   * record under its claim's delivery, so that its redelivery is recognised (`recognised`) instead
   * of being run or routed twice. Absent: a routed record gives its lease back at once (SQS).
   */
  readonly routeOf?: (plan: RecordPlan<R, T, E>) => string | undefined;
  /** A redelivery whose claim says it was routed before (`routeOf` gave `route`). @default done("routed") */
  readonly recognised?: (plan: RecordPlan<R, T, E>, route: string) => RecordOutcome;
  /** With `routeOf`: the dedup key and delivery of a record that could not be decoded (Kafka: its coordinates). */
  readonly undecodedClaimOf?: (record: R) => { readonly key: string; readonly delivery: string };
  /** Between the in-batch checks and the claim (Kafka: wait until a retry record is due). */
  readonly beforeClaim?: (plan: RecordPlan<R, T, E>, envelope: E) => Promise<RecordOutcome | undefined>;
  /** Which records to claim ahead in one go; absent: each record claims when it starts. */
  readonly claimAhead?: (plan: RecordPlan<R, T, E>) => boolean;
  /** Keep each record's lease alive while its effect runs. @default true */
  readonly keepLeases?: boolean;
  readonly watch?: RunWatch<RecordPlan<R, T, E>> | undefined;
  /** After the completions, before the answer (SQS: requeue healthy records; Kafka: produce the routed ones). */
  readonly afterRun?: (plans: ReadonlyArray<RecordPlan<R, T, E>>) => Promise<void>;
  /** A record's identity for the logs (never its payload). */
  readonly describe: (record: R) => Record<string, unknown>;
  /** The trigger's answer. */
  readonly answer: (plans: ReadonlyArray<RecordPlan<R, T, E>>) => A | Promise<A>;
}

/** The consumer's per-container half, resolved once when it is created. */
export interface BatchSettings<R, T, E extends Envelope<T>> {
  readonly handler: (envelope: E, ctx: BatchRecordContext<R>) => unknown;
  readonly idempotency: Idempotency;
  readonly onDuplicate: DuplicateHandler<T, BatchRecordContext<R>> | undefined;
  readonly telemetry: Telemetry;
  readonly concurrency: number;
  /** Stop starting records when less Lambda time than this remains (ms). */
  readonly timeMarginMs: number;
  /** Lambda time kept for what comes after the run (`lambdaDeadline`), in ms. */
  readonly settleReserveMs: number;
  readonly now: () => number;
}

/** What both consumers take in common: their name, dedup, clients and clock. */
export interface BatchConsumerOptions<T, C> {
  readonly consumer?: string;
  readonly idempotency?: IdempotencySetting;
  readonly onDuplicate?: DuplicateHandler<T, C>;
  readonly dynamodbClient: DynamoDBClient;
  readonly telemetry: Telemetry;
  readonly now?: () => number;
  /** Schedules the invocation's deadlines (tests give a clock they control). @default setTimeout */
  readonly timer?: Timer;
}

/**
 * A consumer's per-container half: its environment (read and checked once, at init), its
 * idempotency, its settings, and `open`, which starts one batch's invocation.
 */
export function createBatchConsumer<R, T, E extends Envelope<T>>(
  handler: BatchSettings<R, T, E>["handler"],
  options: BatchConsumerOptions<T, BatchRecordContext<R>>,
  tuning: {
    readonly concurrency: number;
    readonly timeMarginMs: number;
    readonly settleReserveMs: number;
  },
) {
  const env = readConsumerEnv();
  const now = options.now ?? Date.now;
  const idempotency = createIdempotency(options.idempotency, options.dynamodbClient, env);
  const time = { settleReserveMs: tuning.settleReserveMs, timer: options.timer };
  const consumerDeps = { consumer: options.consumer ?? env.consumerName, idempotency, now, time };
  const settings: BatchSettings<R, T, E> = {
    handler,
    idempotency,
    onDuplicate: options.onDuplicate,
    telemetry: options.telemetry,
    concurrency: tuning.concurrency,
    timeMarginMs: tuning.timeMarginMs,
    settleReserveMs: tuning.settleReserveMs,
    now,
  };
  return {
    env,
    now,
    settings,
    open: (context: Context, lambdaSignal: AbortSignal | undefined) =>
      openInvocation(consumerDeps, context, lambdaSignal),
  };
}

export async function runBatch<R, T, E extends Envelope<T>, A>(
  records: ReadonlyArray<R>,
  adapter: BatchAdapter<R, T, E, A>,
  settings: BatchSettings<R, T, E>,
  invocation: Invocation,
): Promise<A> {
  const { telemetry } = settings;
  const { dedup, claims, deadline } = invocation;
  type Plan = RecordPlan<R, T, E>;
  const plans = planBatch<R, T, E>(
    records,
    await decodeRecords<R, T, E>(records, adapter.decode),
    deadline.run,
  );
  const log = (message: string) => (p: Plan, error: unknown) =>
    telemetry.logger.warn(message, { ...adapter.describe(p.record), error: describeError(error) });
  const runner = recordRunner(adapter, settings, invocation, log("could not release the dedup lease"));
  const settle = withinSettlement(deadline.settle, telemetry);
  try {
    countBrokerIds(plans, telemetry);
    // Bad input settled up front is settled before anything waits for a slot.
    if (adapter.rejectUpFront)
      await beforeDeadline(
        Promise.all(
          plans.map(async (p) => (p.outcome = p.decoded.ok ? undefined : await runner.runRecord(p))),
        ),
        deadline.settle,
      );
    const starting = plans.filter((p) => !p.outcome && p.copy.kind === "first");
    const eligible = adapter.claimAhead;
    if (claims && eligible) claimAhead(starting, claims, (p) => p.decoded.ok && eligible(p));
    adapter.watch?.start(starting);
    await runUntilCutOff(plans, runner, { adapter, settings, invocation, onBug: log("unexpected error") });
    // A routed record keeps its lease past the produce, to record its route with it; an abandoned
    // one keeps it with its run.
    const keptForRoute = (p: Plan) =>
      runner.recordsRoutes && p.outcome?.kind === "done" && p.outcome.why === "routed";
    const unused = plans.filter((p) => !keptForRoute(p) && !runner.abandoned.has(p));
    await settle("release", releaseUnused(unused, dedup, log("could not release an unused dedup claim")));
    // Completions are fenced and batched by the store: all of them land before we answer, or are cut.
    completionsFailed(await settleCompletions(plans, dedup, deadline.settle), adapter.describe, telemetry);
    await settle("after the run", adapter.afterRun?.(plans));
    const released = log("could not release the dedup lease of a record not routed");
    const kept = plans.filter((p) => !runner.abandoned.has(p));
    const notRecorded = await settle("routes", settleLeases(kept, dedup, adapter.routeOf, released));
    routesNotRecorded(notRecorded ?? [], adapter.describe, telemetry);
  } catch (error) {
    // Outside record processing: answer for what finished; the rest is never acked.
    telemetry.logger.error("batch processing failed outside a record", { error: describeError(error) });
    await settleCompletions(plans, dedup, deadline.settle).catch(() => undefined);
  } finally {
    // Before the answer: a heartbeat's extension landing after the retry visibilities would undo them.
    await settle("watch", adapter.watch?.stop()).catch(() => undefined);
  }
  try {
    // The adapter bounds the answer's own calls (retry visibilities) by the settlement deadline.
    return await adapter.answer(plans);
  } finally {
    deadline.dispose();
    telemetry.count(METRIC.batchDurationMs, settings.now() - invocation.started);
  }
}

/**
 * A stage after the run, ended by the settlement deadline: one cut there is counted and logged,
 * and what it was for is not acked on its account (each adapter sets outcomes only on answers).
 */
function withinSettlement(deadline: AbortSignal, telemetry: Telemetry) {
  return <W>(stage: string, work: Promise<W> | undefined): Promise<W | undefined> =>
    beforeDeadline(work ?? Promise.resolve(undefined), deadline).catch((error: unknown) => {
      if (!deadline.aborted || error !== deadline.reason) throw error;
      telemetry.count(METRIC.settlementCut);
      telemetry.logger.warn("settlement cut at its deadline", { stage });
      return undefined;
    });
}

/** The dedup key fell back to the broker's coordinates (catches only the broker's own redeliveries). */
function countBrokerIds(plans: ReadonlyArray<RecordPlan<unknown, unknown>>, telemetry: Telemetry): void {
  for (const p of plans)
    if (p.decoded.ok && p.decoded.envelope.idSource === "broker") telemetry.count(METRIC.brokerIdFallback);
}

/**
 * The completion-failure policy, the same for every trigger: a record whose effect ran but whose
 * completion did not land is acked. We ack once the effect is durable, and it is; a redelivery
 * could only run it again. That holds when the key stayed ours (a throttled or timed-out UPDATE:
 * a redelivery would meet our own lease, wait it out, and repeat the effect) and when the lease
 * was lost (another holder runs the key now; its completion, not ours, then marks it done, and
 * if it fails, its own record is retried). Only the dedup mark is missing: a later copy of this
 * record may run the effect again, so it is logged and counted.
 */
function completionsFailed<R>(
  failed: ReadonlyArray<{ plan: { readonly record: R }; error: unknown }>,
  describe: (record: R) => Record<string, unknown>,
  telemetry: Telemetry,
): void {
  for (const { plan, error } of failed) {
    telemetry.count(error instanceof LeaseLostError ? METRIC.leasesLost : METRIC.transientFailures);
    telemetry.logger.error("effect applied but completion not recorded", {
      ...describe(plan.record),
      error: describeError(error),
    });
  }
}

/**
 * The same policy for a route: a record whose copy is out but whose route was not recorded is
 * acked (the copy is durable); only the record of it is missing, so a redelivery of this very
 * record (Lambda resuming its partition below it) may route it again. Logged and counted.
 */
function routesNotRecorded<R>(
  failed: ReadonlyArray<{ plan: { readonly record: R }; error: unknown }>,
  describe: (record: R) => Record<string, unknown>,
  telemetry: Telemetry,
): void {
  for (const { plan, error } of failed) {
    telemetry.count(METRIC.routeNotRecorded);
    telemetry.logger.error("record routed but its route not recorded", {
      ...describe(plan.record),
      error: describeError(error),
    });
  }
}
