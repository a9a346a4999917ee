/**
 * Where a failed Kafka record goes: a retry topic (the next rung of the ladder) or the dead-letter
 * topic, or back to Lambda (`partial-batch` mode for a transient error, and always for a record
 * whose own delivery another invocation holds). On the retry path a key keeps its order: once one
 * of its records leaves for a retry topic, its later records in the batch follow it there.
 */
import { done, type RecordOutcome, unfinished } from "../batch/recordOutcome.ts";
import {
  classifyError,
  DeliveryInProgressError,
  describeError,
  InProgressElsewhereError,
} from "../core/errors.ts";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import { METRIC } from "../observability/telemetry.ts";
import type { KafkaPlan, RoutingContext } from "./kafkaRouting.ts";
import { keyLaneOf } from "./keyLanes.ts";
import type { KafkaRecordView } from "./mskEvent.ts";
import { type Route, routeFailure, topicRole } from "./retryLadder.ts";
import { recordIdOf, routeRecord } from "./routedCopies.ts";
import { KeyOnRetryPathError } from "./routedMessage.ts";
import { SchemaRegistryUnavailableError, usesNoAttempt } from "./schemas/errors.ts";

function rawHeader(view: KafkaRecordView, name: string): string | undefined {
  for (let i = view.headers.length - 1; i >= 0; i--) {
    if (view.headers[i]!.name === name) return view.headers[i]!.value.toString("utf8");
  }
  return undefined;
}

function previousRetryCount(view: KafkaRecordView): number {
  const n = Number(rawHeader(view, CONTEXT_HEADERS.retryCount) ?? 0);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** A route as `recordedRoute` recorded it; anything else (a store shared with other code) is no route. */
function parseRoute(recorded: string): Route | undefined {
  try {
    const to = JSON.parse(recorded) as Partial<Route> | null;
    return typeof to?.topic === "string" && (to.kind === "retry" || to.kind === "dead-letter")
      ? (to as Route)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A record's identity in the logs. */
export const describeRecord = (consumer: string, view: KafkaRecordView) => ({
  consumer,
  topic: view.topic,
  partition: view.partition,
  offset: view.offset,
});

const log = (
  ctx: RoutingContext,
  message: string,
  view: KafkaRecordView,
  extra: Record<string, unknown> = {},
) => ctx.telemetry.logger.warn(message, { ...describeRecord(ctx.consumer, view), ...extra });

/** Whether a key's records follow its first one onto the retry path. */
const keepsKeyOrder = (ctx: RoutingContext) => ctx.failureMode === "retry-topics" && ctx.keyOrder;

/**
 * A redelivery already routed (its dedup record says so): acked, and not produced again. If it went
 * onto the retry path, its key's later records in this batch follow it there, as they did the
 * first time (those already routed are recognised by their own records; the others must not
 * overtake its copy).
 */
export function recognisedRoute(ctx: RoutingContext, p: KafkaPlan, recorded: string): RecordOutcome {
  ctx.telemetry.count(METRIC.routedRecognised);
  const to = parseRoute(recorded);
  if (to?.kind === "retry" && keepsKeyOrder(ctx)) ctx.retryPath.block(keyLaneOf(p.record), to);
  return done("routed");
}

/** The earlier record of this record's key that is on the retry path, if any: this one follows it. */
export function followKey(ctx: RoutingContext, p: KafkaPlan): RecordOutcome | undefined {
  const leader = keepsKeyOrder(ctx) ? ctx.retryPath.blockedBy(keyLaneOf(p.record)) : undefined;
  if (leader?.kind !== "retry") return undefined;
  ctx.telemetry.count(METRIC.kafkaFollowedKey);
  const why = `an earlier record of this key is on the retry path (${leader.topic}); following it to keep key order`;
  return routeRecord(ctx, p, { ...leader }, new KeyOnRetryPathError(why));
}

/**
 * A record whose own delivery another invocation holds (DeliveryInProgressError: the same offset
 * in two invocations at once, or one that died holding it) goes back to Lambda, in either
 * failure mode, and is never routed: routed, its offset would be acked while the other
 * invocation may still fail or die (a success without the effect), and a dead invocation's
 * record would circle the ladder. Each hand-back uses one of the mapping's retry attempts, so
 * first wait what this invocation may for the lease to end (a dead holder's ends within the
 * lease length; a live one's is renewed): the redelivery then finds the key free, or done.
 */
async function handBack(
  ctx: RoutingContext,
  p: KafkaPlan,
  error: DeliveryInProgressError,
  retryAtMs: number | undefined,
): Promise<RecordOutcome> {
  const waitMs = Math.min((retryAtMs ?? ctx.now()) - ctx.now(), ctx.remainingMs() - ctx.timeMarginMs);
  if (waitMs > 0) await ctx.sleep(waitMs);
  ctx.telemetry.count(METRIC.inProgressElsewhere);
  log(ctx, "record held by another invocation of the same delivery; handed back", p.record, {
    id: recordIdOf(p),
    error: describeError(error),
  });
  return unfinished(error);
}

/** A failed record: handed back, left to Lambda (`partial-batch`), or routed on (retry topic or DLQ). */
export function failRecord(
  ctx: RoutingContext,
  p: KafkaPlan,
  error: unknown,
  retryAtMs?: number,
): RecordOutcome | Promise<RecordOutcome> {
  if (error instanceof DeliveryInProgressError) return handBack(ctx, p, error, retryAtMs);
  const { telemetry, failureMode, ladder } = ctx;
  const view = p.record;
  const kind = classifyError(error);
  telemetry.count(kind === "permanent" ? METRIC.permanentFailures : METRIC.transientFailures);
  if (error instanceof InProgressElsewhereError) telemetry.count(METRIC.inProgressElsewhere);
  if (error instanceof SchemaRegistryUnavailableError) telemetry.count(METRIC.schemaRegistryUnavailable);
  log(ctx, "record failed", view, { id: recordIdOf(p), kind, error: describeError(error) });
  if (failureMode === "partial-batch" && kind === "transient") return unfinished(error);
  const baseTopic = rawHeader(view, CONTEXT_HEADERS.originalTopic) ?? topicRole(ladder, view.topic).baseTopic;
  // A record held elsewhere, or one whose schema registry cannot answer, has not failed: it goes
  // round the ladder again without using up a rung (never dead-lettered for that alone).
  const errorKind = error instanceof InProgressElsewhereError || usesNoAttempt(error) ? "contended" : kind;
  const to = routeFailure({ ladder, baseTopic, previousRetryCount: previousRetryCount(view), errorKind });
  if (failureMode === "partial-batch" && to.kind === "retry") return unfinished(error);
  if (to.kind === "retry" && ctx.keyOrder) ctx.retryPath.block(keyLaneOf(view), to);
  return routeRecord(ctx, p, to, error);
}
