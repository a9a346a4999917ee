/**
 * A record of a retry topic runs only once it is due (its timestamp plus its rung's delay): it
 * waits for that when the invocation has the time, and is handed back to Lambda otherwise.
 */
import { type RecordOutcome, unfinished } from "../batch/recordOutcome.ts";
import { METRIC } from "../observability/telemetry.ts";
import { NotYetDueError } from "./errors.ts";
import type { RoutingContext } from "./kafkaRouting.ts";
import type { KafkaRecordView } from "./mskEvent.ts";
import { dueDecision, topicRole } from "./retryLadder.ts";

/** A retry-topic record waits until it is due, or is left for a redelivery when it will not be in time. */
export async function untilDue(
  ctx: RoutingContext,
  view: KafkaRecordView,
  remainingMs: () => number,
): Promise<RecordOutcome | undefined> {
  const role = topicRole(ctx.ladder, view.topic);
  if (role.kind !== "retry") return undefined;
  const due = dueDecision({
    recordTimestampMs: view.timestamp,
    delayMs: role.delayMs,
    nowMs: ctx.now(),
    remainingMs: remainingMs(),
    reserveMs: ctx.timeMarginMs,
    ...(ctx.maxDueWaitMs !== undefined ? { maxWaitMs: ctx.maxDueWaitMs } : {}),
  });
  if (due.kind === "not-yet") {
    // Each hand-back uses one of the mapping's finite retry attempts (and once they are gone,
    // Lambda sends the record to the dead-letter topic), so first wait all this invocation may:
    // a record of a rung of d is then handed back at most ⌈d ÷ (timeout − margin)⌉ times, what
    // the construct sizes MaximumRetryAttempts for (`kafkaWaitHandBacks` in lib/cdk/rules.ts).
    const budget = Math.min(remainingMs() - ctx.timeMarginMs, ctx.maxDueWaitMs ?? Number.POSITIVE_INFINITY);
    if (budget > 0) await ctx.sleep(budget);
    ctx.telemetry.count(METRIC.kafkaNotYetDue);
    return unfinished(new NotYetDueError(`not due for another ${due.dueAtMs - ctx.now()} ms`));
  }
  if (due.kind === "wait") await ctx.sleep(due.waitMs);
  return undefined;
}
