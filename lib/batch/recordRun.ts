/**
 * One record's run, the same for every consumer once its input is decoded: an in-batch copy is
 * done with its first, a same-id record with another payload waits, then claim, duplicate (with
 * its stored result for `onDuplicate`), effect under a kept lease, outcome. Where a failure goes is
 * the adapter's (`fail`): SQS backoff or parking, Kafka retry topics.
 */
import type { Context } from "aws-lambda";
import type { Envelope } from "../core/envelope.ts";
import { InProgressElsewhereError } from "../core/errors.ts";
import type { DuplicateHandler, Idempotency } from "../dedup/idempotency.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import type { RecordPlan } from "./batchPlan.ts";
import { runKeyed } from "./keyedScheduler.ts";
import { lambdaDeadline, runReserveMs, type Timer } from "./lambdaDeadline.ts";
import {
  type ClaimDeps,
  type ClaimVerdict,
  claimUndecoded,
  runWithLease,
  takeClaim,
} from "./recordClaims.ts";
import { done, outcomeOfTask, type RecordOutcome, stopsLane } from "./recordOutcome.ts";

export interface RecordRunDeps<R, T, C, E extends Envelope<T> = Envelope<T>> {
  readonly claims: ClaimDeps | undefined;
  readonly idempotency: Idempotency;
  readonly telemetry: Telemetry;
  readonly handler: (envelope: E, ctx: C) => unknown;
  readonly contextOf: (plan: RecordPlan<R, T, E>) => C;
  readonly fail: (
    plan: RecordPlan<R, T, E>,
    error: unknown,
    retryAtMs?: number,
  ) => RecordOutcome | Promise<RecordOutcome>;
  readonly onDuplicate: DuplicateHandler<T, C> | undefined;
  /** A step between the in-batch checks and the claim (Kafka: wait for a retry record to come due). */
  readonly beforeClaim?:
    | ((plan: RecordPlan<R, T, E>, envelope: E) => Promise<RecordOutcome | undefined>)
    | undefined;
  /**
   * After the claim (a duplicate or a delivery already routed is done first), before the effect:
   * Kafka sends a record whose key is on the retry path after it.
   */
  readonly follow?: ((plan: RecordPlan<R, T, E>) => RecordOutcome | undefined) | undefined;
  /**
   * The adapter records the routes of routed records (`BatchAdapter.routeOf`): a routed record
   * keeps its lease until then, instead of giving it back when it fails.
   */
  readonly recordsRoutes?: boolean;
  /** A delivery its claim says was routed before: acked, neither run nor routed again. */
  readonly recognised?: ((plan: RecordPlan<R, T, E>, route: string) => RecordOutcome) | undefined;
  /** Keep the lease alive while the effect runs. @default true */
  readonly keepAlive?: boolean;
  readonly onRenewError?: (error: unknown) => void;
  readonly onReleaseError: (plan: RecordPlan<R, T, E>, error: unknown) => void;
}

/** What the runner does with a record that could not be decoded (the adapter's `reject`). */
export interface RejectDeps<R, T, E extends Envelope<T> = Envelope<T>>
  extends Pick<
    RecordRunDeps<R, T, unknown, E>,
    "claims" | "follow" | "recordsRoutes" | "recognised" | "onReleaseError"
  > {
  readonly reject: (plan: RecordPlan<R, T, E>, error: unknown) => RecordOutcome | Promise<RecordOutcome>;
  /** The dedup key and delivery its route is recorded under (Kafka: its coordinates). */
  readonly undecodedClaimOf?:
    | ((record: R) => { readonly key: string; readonly delivery: string })
    | undefined;
}

const isRouted = (o: RecordOutcome) => o.kind === "done" && o.why === "routed";

/** A record that did not run to success gives its lease back now, unless it was routed and its route is to be recorded. */
async function afterFailure<R, T, E extends Envelope<T>>(
  p: RecordPlan<R, T, E>,
  outcome: RecordOutcome,
  deps: Pick<RecordRunDeps<R, T, unknown, E>, "claims" | "recordsRoutes" | "onReleaseError">,
): Promise<RecordOutcome> {
  const held = p.lease;
  if (!held || !deps.claims || (deps.recordsRoutes && isRouted(outcome))) return outcome;
  p.lease = undefined;
  await deps.claims.dedup.release(held.lease).catch((error: unknown) => deps.onReleaseError(p, error));
  return outcome;
}

/**
 * A record that could not be decoded: recognised if this delivery was routed before, else it
 * follows its key's retry path or goes where the adapter's `reject` sends it.
 */
export async function runRejectedRecord<R, T, E extends Envelope<T> = Envelope<T>>(
  p: RecordPlan<R, T, E>,
  error: unknown,
  deps: RejectDeps<R, T, E>,
): Promise<RecordOutcome> {
  const claim = deps.claims && deps.recordsRoutes ? deps.undecodedClaimOf?.(p.record) : undefined;
  const seen = claim && deps.claims ? await claimUndecoded(p, claim, deps.claims) : undefined;
  if (seen) return deps.recognised?.(p, seen.routed) ?? done("routed");
  return afterFailure(p, deps.follow?.(p) ?? (await deps.reject(p, error)), deps);
}

export async function runPlannedRecord<R, T, C, E extends Envelope<T> = Envelope<T>>(
  p: RecordPlan<R, T, E>,
  envelope: E,
  deps: RecordRunDeps<R, T, C, E>,
): Promise<RecordOutcome> {
  const { telemetry, claims, idempotency } = deps;
  if (p.copy.kind === "copy") {
    telemetry.count(METRIC.inBatchDuplicates);
    return done("duplicate");
  }
  if (p.copy.kind === "other-payload") {
    const why = `'${envelope.id}' came twice in this batch with different payloads; this one waits for the first`;
    return deps.follow?.(p) ?? deps.fail(p, new InProgressElsewhereError(why));
  }
  const early = await deps.beforeClaim?.(p, envelope);
  if (early) return early;
  const ctx = deps.contextOf(p);
  const verdict: ClaimVerdict = claims ? await takeClaim(p, claims) : { kind: "run" };
  if (verdict.kind === "routed") return deps.recognised?.(p, verdict.route) ?? done("routed");
  if (verdict.kind === "duplicate") {
    telemetry.count(METRIC.duplicates);
    // The first run's answer, for a consumer that replies; a throw retries the record.
    const storedResult = idempotency.storedResultOf(verdict.storedResult);
    const replied = await Promise.resolve()
      .then(() => deps.onDuplicate?.(envelope, { ...ctx, storedResult }))
      .then(
        () => undefined,
        (error: unknown) => ({ error }),
      );
    return replied ? deps.fail(p, replied.error) : done("duplicate");
  }
  // Claimed first, so that a follower's route is recorded under its lease like any other's.
  const followed = deps.follow?.(p);
  if (followed) return afterFailure(p, followed, deps);
  if (verdict.kind === "held") return deps.fail(p, verdict.error, verdict.retryAtMs);
  if (verdict.kind === "failed") return deps.fail(p, verdict.error);
  const effect = await runWithLease(
    p,
    claims,
    {
      resultToStore: idempotency.resultToStore,
      keepAlive: deps.keepAlive ?? true,
      keepOnFailure: deps.recordsRoutes ?? false,
      onLeaseLost: () => telemetry.count(METRIC.leasesLost),
      onRenewError: deps.onRenewError ?? (() => undefined),
      onReleaseError: (error) => deps.onReleaseError(p, error),
    },
    async () => deps.handler(envelope, ctx),
  );
  if (!effect.ok) return afterFailure(p, await deps.fail(p, effect.error), deps);
  telemetry.count(METRIC.processed);
  return done("processed");
}

/**
 * What every batch starts with: its consumer name (the option, else `CONSUMER_NAME`, else the
 * function name), its dedup store, the claim dependencies, and the Lambda deadline.
 */
export function openInvocation(
  consumerDeps: {
    readonly consumer: string | undefined;
    readonly idempotency: Idempotency;
    readonly now: () => number;
    /** The settlement reserve (`settleReserveMs`), and the deadlines' timer (tests). */
    readonly time: { readonly settleReserveMs: number; readonly timer?: Timer | undefined };
  },
  context: Context,
  lambdaSignal: AbortSignal | undefined,
) {
  const { idempotency, now, time } = consumerDeps;
  const consumer = consumerDeps.consumer ?? context.functionName;
  const dedup = idempotency.storeFor(consumer);
  const claims: ClaimDeps | undefined = dedup && { dedup, payloadHashOf: idempotency.payloadHashOf, now };
  // A context without a clock (a hand-made one in a test or a tool) never runs out of time.
  const remainingMs = () =>
    typeof context.getRemainingTimeInMillis === "function"
      ? context.getRemainingTimeInMillis()
      : Number.POSITIVE_INFINITY;
  return {
    started: now(),
    context,
    consumer,
    dedup,
    claims,
    remainingMs,
    /** The Lambda time left before the run deadline (`lambdaDeadline`), in ms. */
    runRemainingMs: () => remainingMs() - runReserveMs(time.settleReserveMs),
    deadline: lambdaDeadline(context, lambdaSignal, time),
  };
}

/** One batch's invocation: what `openInvocation` gives every batch. */
export type Invocation = ReturnType<typeof openInvocation>;

/**
 * Runs every plan through the keyed scheduler (an unfinished record stops its lane) and gives each
 * one its outcome: what it returned, or, for one that never started, why (`OutOfTimeError`,
 * `HeldBackError`). A record decided before the run (`outcome` already set) keeps its outcome.
 */
export async function runPlans<P extends RecordPlan<unknown, unknown>>(
  plans: ReadonlyArray<P>,
  options: {
    readonly laneOf: (plan: P) => string | undefined;
    readonly run: (plan: P) => Promise<RecordOutcome> | RecordOutcome;
    readonly concurrency: number;
    readonly canStart: () => boolean;
    readonly telemetry: Telemetry;
    /** A rejected run is a bug in our own code path; the record is never acked. */
    readonly onBug: (plan: P, error: unknown) => void;
  },
): Promise<void> {
  const tasks = await runKeyed(
    plans.map((p) => ({
      key: options.laneOf(p),
      // A record whose claim went ahead takes a slot once the claim is answered.
      ...(p.claim ? { ready: p.claim } : {}),
      run: async () => {
        if (p.outcome) return p.outcome;
        const outcome = await options.run(p);
        // A record abandoned at the cut-off (`runBatch`) keeps the outcome it was given then.
        p.outcome ??= outcome;
        return p.outcome;
      },
    })),
    { concurrency: options.concurrency, canStart: options.canStart, stopsLane },
  );
  plans.forEach((p, i) => {
    const task = tasks[i]!;
    if (task.status === "rejected") options.onBug(p, task.reason);
    if (p.outcome) return;
    if (task.status === "skipped" && task.reason === "out-of-time") options.telemetry.count(METRIC.outOfTime);
    p.outcome = outcomeOfTask(task);
  });
}
