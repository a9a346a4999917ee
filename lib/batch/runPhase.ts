/**
 * One batch's run phase, between the claims and the settlement: each record's run (the adapter's
 * steps around the user's handler), the keyed scheduler, and the cut-off (`lambdaDeadline.ts`).
 * The run ends when every record has an outcome, or at the cut-off: a record still inside its
 * handler then is abandoned; one past it (parking, a claim) settles by itself, every call of it
 * bounded by the settlement deadline. Per invocation: built for one batch, shared by nothing.
 */
import type { Envelope } from "../core/envelope.ts";
import { OutOfTimeError, RecordTimeoutError } from "../core/errors.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import type { RecordPlan } from "./batchPlan.ts";
import { beforeDeadline } from "./lambdaDeadline.ts";
import { type RecordOutcome, unfinished } from "./recordOutcome.ts";
import { type Invocation, runPlannedRecord, runPlans, runRejectedRecord } from "./recordRun.ts";
import type { BatchAdapter, BatchRecordContext, BatchSettings } from "./runBatch.ts";

/** How each record of a batch runs, and which are in their handler or were abandoned. */
export interface RecordRunner<R, T, E extends Envelope<T>> {
  readonly runRecord: (p: RecordPlan<R, T, E>) => Promise<RecordOutcome>;
  /** The adapter records routes (`routeOf`): a routed record keeps its lease until then. */
  readonly recordsRoutes: boolean;
  /**
   * Abandoned at the cut-off: their runs go on, so a late failure of one is neither parked nor
   * routed (it was handed back already), and their leases stay with those runs.
   */
  readonly abandoned: Set<RecordPlan<R, T, E>>;
  /** Inside the user's handler right now: only those are abandoned at the cut-off. */
  readonly inHandler: ReadonlySet<RecordPlan<R, T, E>>;
}

export function recordRunner<R, T, E extends Envelope<T>, A>(
  adapter: BatchAdapter<R, T, E, A>,
  settings: BatchSettings<R, T, E>,
  invocation: Invocation,
  onReleaseError: (p: RecordPlan<R, T, E>, error: unknown) => void,
): RecordRunner<R, T, E> {
  type Plan = RecordPlan<R, T, E>;
  const { telemetry } = settings;
  const { context, claims, deadline } = invocation;
  const abandoned = new Set<Plan>();
  const inHandler = new Set<Plan>();
  const planOf = new WeakMap<BatchRecordContext<R>, Plan>();
  const run = {
    claims,
    idempotency: settings.idempotency,
    telemetry,
    handler: async (envelope: E, ctx: BatchRecordContext<R>) => {
      const p = planOf.get(ctx)!;
      // A record whose claim came back after the run deadline does not start its effect.
      if (deadline.run.aborted) throw new OutOfTimeError("not started: the run's deadline had passed");
      inHandler.add(p);
      try {
        return await settings.handler(envelope, ctx);
      } finally {
        inHandler.delete(p);
      }
    },
    contextOf: (p: Plan): BatchRecordContext<R> => {
      const ctx = { context, record: p.record, signal: p.signal };
      planOf.set(ctx, p);
      return ctx;
    },
    fail: (p: Plan, error: unknown, retryAtMs?: number) =>
      abandoned.has(p) ? unfinished(error) : adapter.fail(p, error, retryAtMs),
    onDuplicate: settings.onDuplicate,
    beforeClaim: adapter.beforeClaim,
    follow: adapter.follow,
    recordsRoutes: adapter.routeOf !== undefined,
    recognised: adapter.recognised,
    reject: (p: Plan, error: unknown) => (abandoned.has(p) ? unfinished(error) : adapter.reject(p, error)),
    undecodedClaimOf: adapter.undecodedClaimOf,
    keepAlive: adapter.keepLeases ?? true,
    onRenewError: () => telemetry.count(METRIC.heartbeatErrors),
    onReleaseError,
  };
  const runRecord = async (p: Plan): Promise<RecordOutcome> =>
    adapter.lead?.(p) ??
    (p.decoded.ok
      ? runPlannedRecord(p, p.decoded.envelope, run)
      : runRejectedRecord(p, p.decoded.error, run));
  return { runRecord, recordsRoutes: run.recordsRoutes, abandoned, inHandler };
}

/**
 * Runs every plan through the keyed scheduler until each has an outcome, or until the cut-off:
 * then the records still inside their handler are abandoned, and those past it get until the
 * settlement deadline to settle (after which whatever is left is abandoned too).
 */
export async function runUntilCutOff<R, T, E extends Envelope<T>, A>(
  plans: ReadonlyArray<RecordPlan<R, T, E>>,
  runner: RecordRunner<R, T, E>,
  deps: {
    readonly adapter: BatchAdapter<R, T, E, A>;
    readonly settings: BatchSettings<R, T, E>;
    readonly invocation: Invocation;
    readonly onBug: (p: RecordPlan<R, T, E>, error: unknown) => void;
  },
): Promise<void> {
  type Plan = RecordPlan<R, T, E>;
  const { adapter, settings, invocation } = deps;
  const { deadline } = invocation;
  const running = new Map<Plan, Promise<RecordOutcome>>();
  const ran = runPlans(plans, {
    laneOf: adapter.laneOf,
    run: (p) => {
      const r = runner.runRecord(p).finally(() => {
        running.delete(p);
        adapter.watch?.finished(p);
      });
      running.set(p, r);
      return r;
    },
    concurrency: settings.concurrency,
    // No record starts after the run deadline, nor with less than the time margin left.
    canStart: () =>
      !deadline.run.aborted &&
      invocation.runRemainingMs() > 0 &&
      invocation.remainingMs() > settings.timeMarginMs,
    telemetry: settings.telemetry,
    onBug: deps.onBug,
  });
  if (!(await cutOffFirst(ran, deadline.cutOff))) return;
  abandonAtCutOff(plans, (p) => runner.inHandler.has(p), running, runner.abandoned, settings.telemetry);
  const settling = [...running].filter(([p]) => !runner.abandoned.has(p)).map(([, r]) => r);
  if (
    await cutOffFirst(
      Promise.all(settling).then(() => undefined),
      deadline.settle,
    )
  )
    abandonAtCutOff(plans, () => true, running, runner.abandoned, settings.telemetry);
}

/** Waits for `ran` until `cutOff` aborts; `true` if the cut-off came first (the run goes on). */
async function cutOffFirst(ran: Promise<void>, cutOff: AbortSignal): Promise<boolean> {
  return beforeDeadline(ran, cutOff).then(
    () => false,
    (error: unknown) => {
      if (cutOff.aborted && error === cutOff.reason) return true;
      throw error;
    },
  );
}

/**
 * Records without an outcome get one. A running record that `stuck` says is stuck (still inside
 * its handler, which did not stop at its signal) is abandoned: unfinished with a
 * `RecordTimeoutError`, and never acked on this run's account, since its effect may still be under
 * way (so it is neither parked nor routed, and its lease stays with the run, which completes or
 * lets it lapse). One that never started is unfinished for lack of time, as the scheduler would
 * have said; any other running record is left to finish.
 */
function abandonAtCutOff<P extends RecordPlan<unknown, unknown>>(
  plans: ReadonlyArray<P>,
  stuck: (p: P) => boolean,
  running: ReadonlyMap<P, unknown>,
  abandoned: Set<P>,
  telemetry: Telemetry,
): void {
  for (const p of plans) {
    if (p.outcome) continue;
    if (running.has(p)) {
      if (!stuck(p)) continue;
      abandoned.add(p);
      p.outcome = unfinished(new RecordTimeoutError("still running at the cut-off; handed back unfinished"));
      telemetry.count(METRIC.abandonedAtCutOff);
    } else {
      p.outcome = unfinished(new OutOfTimeError("not started: too little Lambda time was left"));
      telemetry.count(METRIC.outOfTime);
    }
  }
}
