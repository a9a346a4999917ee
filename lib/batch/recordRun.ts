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
import { lambdaDeadline } from "./lambdaDeadline.ts";
import { type ClaimDeps, runWithLease, takeClaim } from "./recordClaims.ts";
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
  /** Keep the lease alive while the effect runs. @default true */
  readonly keepAlive?: boolean;
  readonly onRenewError?: (error: unknown) => void;
  readonly onReleaseError: (plan: RecordPlan<R, T, E>, error: unknown) => void;
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
    return deps.fail(p, new InProgressElsewhereError(why));
  }
  const early = await deps.beforeClaim?.(p, envelope);
  if (early) return early;
  const ctx = deps.contextOf(p);
  if (claims) {
    const verdict = await takeClaim(p, claims);
    if (verdict.kind === "held") return deps.fail(p, verdict.error, verdict.retryAtMs);
    if (verdict.kind === "failed") return deps.fail(p, verdict.error);
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
  }
  const effect = await runWithLease(
    p,
    claims,
    {
      resultToStore: idempotency.resultToStore,
      keepAlive: deps.keepAlive ?? true,
      onLeaseLost: () => telemetry.count(METRIC.leasesLost),
      onRenewError: deps.onRenewError ?? (() => undefined),
      onReleaseError: (error) => deps.onReleaseError(p, error),
    },
    async () => deps.handler(envelope, ctx),
  );
  if (!effect.ok) return deps.fail(p, effect.error);
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
  },
  context: Context,
  lambdaSignal: AbortSignal | undefined,
) {
  const { idempotency, now } = consumerDeps;
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
    deadline: lambdaDeadline(context, lambdaSignal),
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
      run: async () => {
        p.outcome ??= await options.run(p);
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
