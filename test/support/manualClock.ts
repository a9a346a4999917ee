import type { Context } from "aws-lambda";
import type { Timer } from "../../lib/batch/lambdaDeadline.ts";

/**
 * A clock the test moves, for an invocation of `timeoutMs`: the Lambda context's remaining time
 * reads it, and the timers given to it (the consumer's `timer` option, the test's own events) fire
 * only when the test moves it. Nothing here races the real clock.
 */
export function manualClock(timeoutMs: number) {
  let now = 0;
  let seq = 0;
  const timers: Array<{ at: number; seq: number; fire: () => void; label: string }> = [];
  const schedule = (at: number, fire: () => void, label: string) => {
    const t = { at, seq: seq++, fire, label };
    timers.push(t);
    return () => {
      const i = timers.indexOf(t);
      if (i >= 0) timers.splice(i, 1);
    };
  };
  const remainingMs = () => Math.max(0, timeoutMs - now);
  return {
    remainingMs,
    /** A Lambda context whose remaining time is this clock's. */
    context(functionName = "f"): Context {
      return { functionName, getRemainingTimeInMillis: remainingMs } as unknown as Context;
    },
    /** For the consumer's `timer` option. */
    timer: ((callback, delayMs) => schedule(now + Math.max(0, delayMs), callback, "consumer")) as Timer,
    /** The test's own event when `remaining` ms of Lambda time are left (Middy's early timeout, say). */
    whenRemaining(remaining: number, label: string, fire: () => void): void {
      schedule(timeoutMs - remaining, fire, label);
    },
    /** Timers still to fire. */
    pending: () => timers.length,
    /**
     * Moves the clock to the earliest pending timer and fires every timer due then, in the order
     * they were set. Returns the remaining time then and the labels fired ("consumer" for the
     * consumer's own). Throws when nothing is pending: nothing would ever end what waits.
     */
    next(): { remainingMs: number; labels: string[] } {
      if (timers.length === 0) throw new Error("no timer pending: nothing would end the wait");
      const at = Math.min(...timers.map((t) => t.at));
      const due = timers.filter((t) => t.at === at).sort((a, b) => a.seq - b.seq);
      for (const t of due) timers.splice(timers.indexOf(t), 1);
      now = Math.max(now, at);
      for (const t of due) t.fire();
      return { remainingMs: remainingMs(), labels: due.map((t) => t.label) };
    },
  };
}
