/**
 * Where an invocation's time goes, decided once when the batch opens, from the Lambda's remaining
 * time R:
 *
 *   run ──────────── run deadline ─── cut-off ─── settlement deadline ─── Middy's early timeout ─ Lambda's
 *                    R − reserve                   R − answer margin        R − middyEarlyMs
 *
 * - The run deadline (`run`): no record starts after it, and each running record's signal aborts
 *   with a `RecordTimeoutError`. What comes after the run needs time of its own (releases,
 *   completions, the SQS requeue and parking, the Kafka produce to the retry topics, the records'
 *   routes, the retry visibilities): the settlement reserve (`settleReserveMs`) keeps it, instead
 *   of letting a run that ends near the timeout leave the answer to Middy's early timeout, which
 *   fails the whole batch (and on a last receive SQS then dead-letters finished records with no
 *   context).
 * - The cut-off (`cutOff`), halfway between the run deadline and the settlement deadline: a record
 *   still running then (its handler ignores its signal) is abandoned, unfinished and not acked (its
 *   effect may still be under way, so it is neither parked nor routed, and it keeps its lease).
 *   Until then a record that reacts to its signal settles through its own failure path (a park).
 * - The settlement deadline (`settle`): every settlement call is bounded by it (its abort signal
 *   goes to the SDK call; what does not answer in time is not acked on its account).
 * - The answer margin (`LAMBDA_DEADLINE`): the answer's own work, then Middy's early timeout.
 *
 * Middy 7 also passes the handler a signal (`(event, context, { signal })`), aborted just before
 * its early-timeout response: all three deadlines follow it.
 */
import type { Context } from "aws-lambda";
import { RecordTimeoutError, SettlementTimeoutError } from "../core/errors.ts";

/** The fixed end of every invocation, after the settlement. */
export const LAMBDA_DEADLINE = {
  /**
   * Middy's early timeout, as `batchHandler` sets it (`timeoutEarlyInMillis`): Middy answers with a
   * TimeoutError this long before Lambda's own timeout (failing the batch whole), a last resort
   * that leaves its onError middlewares time to publish the metrics. (ms)
   */
  middyEarlyMs: 250,
  /** What the answer needs once the settlement calls have stopped: building it, the return. (ms) */
  answerMs: 250,
} as const;

/** How far before Lambda's timeout the settlement must be over (ms). */
export const ANSWER_MARGIN_MS = LAMBDA_DEADLINE.middyEarlyMs + LAMBDA_DEADLINE.answerMs;

/** The reserve actually kept before the run deadline: `settleReserveMs`, and never less than the answer margin (ms). */
export const runReserveMs = (settleReserveMs: number): number => Math.max(settleReserveMs, ANSWER_MARGIN_MS);

/** Schedules `callback` after `delayMs`; returns what cancels it. @default setTimeout (unref'd) */
export type Timer = (callback: () => void, delayMs: number) => () => void;

const realTimer: Timer = (callback, delayMs) => {
  const t = setTimeout(callback, delayMs);
  t.unref();
  return () => clearTimeout(t);
};

/** One invocation's deadlines, as abort signals. */
export interface Deadline {
  /** Aborts at the run deadline: each record's signal follows it. */
  readonly run: AbortSignal;
  /** Aborts at the cut-off: a record still running is abandoned. */
  readonly cutOff: AbortSignal;
  /** Aborts at the settlement deadline: every settlement call is bounded by it. */
  readonly settle: AbortSignal;
  /** Clears the timers: call once the batch has answered. */
  dispose(): void;
}

export function lambdaDeadline(
  context: Pick<Context, "getRemainingTimeInMillis">,
  given: AbortSignal | undefined,
  options: { readonly settleReserveMs: number; readonly timer?: Timer | undefined },
): Deadline {
  const timer = options.timer ?? realTimer;
  const run = new AbortController();
  const cutOff = new AbortController();
  const settle = new AbortController();
  const remaining =
    typeof context.getRemainingTimeInMillis === "function" ? context.getRemainingTimeInMillis() : undefined;
  const cancels: Array<() => void> = [];
  // A context without a clock (a hand-made one in a test or a tool) never runs out of time.
  if (remaining !== undefined && Number.isFinite(remaining)) {
    const runAt = Math.max(0, remaining - runReserveMs(options.settleReserveMs));
    const settleAt = Math.max(0, remaining - ANSWER_MARGIN_MS);
    const cutAt = runAt + (settleAt - runAt) / 2;
    const at = (ms: number, c: AbortController, reason: () => Error) =>
      cancels.push(timer(() => c.abort(reason()), ms));
    at(runAt, run, () => new RecordTimeoutError("still running at the run's deadline"));
    at(cutAt, cutOff, () => new RecordTimeoutError("still running at the cut-off; abandoned"));
    at(settleAt, settle, () => new SettlementTimeoutError("cut at the settlement deadline"));
  }
  const onGiven = () => {
    const why = () => new RecordTimeoutError("the invocation was aborted", { cause: given?.reason });
    for (const c of [run, cutOff]) c.abort(why());
    settle.abort(new SettlementTimeoutError("the invocation was aborted", { cause: given?.reason }));
  };
  if (given?.aborted) onGiven();
  else given?.addEventListener("abort", onGiven, { once: true });
  return {
    run: run.signal,
    cutOff: cutOff.signal,
    settle: settle.signal,
    dispose() {
      for (const cancel of cancels) cancel();
      given?.removeEventListener("abort", onGiven);
    },
  };
}

/**
 * `work`, or a rejection with the signal's reason once it aborts first. The work itself goes on
 * (its own abort signal, where it takes one, stops it); a late failure of it is not reported.
 */
export function beforeDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  work.catch(() => undefined);
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
