/**
 * The Kafka adapter's side of the stages: where a failed record goes (a retry topic, the
 * dead-letter topic, or back to Lambda in `partial-batch` mode), key order on the retry path, the
 * one produce request for everything routed, and the answer. Built per invocation.
 */
import { type RecordPlan, unfinishedOf } from "../batch/batchPlan.ts";
import { beforeDeadline } from "../batch/lambdaDeadline.ts";
import { done, type RecordOutcome, unfinished } from "../batch/recordOutcome.ts";
import {
  classifyError,
  DeliveryInProgressError,
  describeError,
  InProgressElsewhereError,
} from "../core/errors.ts";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { KafkaBatchIncompleteError, NotYetDueError, RouteProduceError } from "./errors.ts";
import { type LambdaSchemaRegistryMode, lambdaDecodedParts } from "./lambdaDecoded.ts";
import type { KafkaRecordView } from "./mskEvent.ts";
import { type KafkaBatchResponse, kafkaBatchResponse } from "./partialResponse.ts";
import type { KafkaProducer, OutgoingMessage } from "./producer.ts";
import { dueDecision, type RetryLadder, type Route, routeFailure, topicRole } from "./retryLadder.ts";
import { KeyOnRetryPathError, routedMessage } from "./routedMessage.ts";
import { SchemaRegistryUnavailableError, usesNoAttempt } from "./schemas/errors.ts";

export interface KafkaRoutingDeps {
  readonly ladder: RetryLadder;
  readonly producer: KafkaProducer;
  readonly telemetry: Telemetry;
  readonly consumer: string;
  readonly failureMode: "retry-topics" | "partial-batch";
  readonly keyOrder: boolean;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly timeMarginMs: number;
  readonly maxDueWaitMs: number | undefined;
  /**
   * The settlement deadline (`lambdaDeadline`): a produce not confirmed by then counts as failed
   * (its records are handed back; a copy that lands later is deduplicated downstream).
   */
  readonly deadline?: AbortSignal;
  /** The invocation's remaining time (ms). */
  readonly remainingMs: () => number;
  /** The mapping's schema-registry mode: the parts it hands over decoded, which copies say. */
  readonly lambdaSchemaRegistry: LambdaSchemaRegistryMode | undefined | false;
}

type Plan = RecordPlan<KafkaRecordView, unknown>;

/**
 * Blocks a lane (a Kafka key, here) behind a record that left for the retry path, so the lane's
 * later records follow it instead of overtaking it. Per invocation.
 */
export function createLaneGate<B>() {
  const blocked = new Map<string, B>();
  return {
    block(lane: string | undefined, by: B): void {
      if (lane !== undefined && !blocked.has(lane)) blocked.set(lane, by);
    },
    blockedBy(lane: string | undefined): B | undefined {
      return lane === undefined ? undefined : blocked.get(lane);
    },
  };
}

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

/** A route as `routeOf` recorded it; anything else (a store shared with other code) is no route. */
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

/** A Kafka key's lane inside its partition; records without a key have none. */
export const keyLaneOf = (v: KafkaRecordView) =>
  v.keyBytes === null ? undefined : `${v.partitionKey}|${v.keyBytes.toString("base64")}`;

export function kafkaRouting(deps: KafkaRoutingDeps) {
  const { ladder, telemetry, consumer, failureMode } = deps;
  const routes: { plan: Plan; route: Route; message: OutgoingMessage }[] = [];
  const routeByPlan = new Map<Plan, Route>();
  // Set once the produce went through: a routed record is acked only then.
  let produced = false;
  // Once a key has a record on the retry path, its later records follow it there (key order).
  const retryPath = createLaneGate<Route>();
  const idOf = (p: Plan) => (p.decoded.ok ? p.decoded.envelope.id : undefined);
  /** A record's identity in the logs. */
  const describe = (view: KafkaRecordView) => ({
    consumer,
    topic: view.topic,
    partition: view.partition,
    offset: view.offset,
  });
  const log = (message: string, view: KafkaRecordView, extra: Record<string, unknown> = {}) =>
    telemetry.logger.warn(message, { ...describe(view), ...extra });

  function route(p: Plan, to: Route, error: unknown): RecordOutcome {
    const message = routedMessage({
      record: p.record,
      route: to,
      error,
      messageId: idOf(p),
      consumer,
      now: new Date(deps.now()),
      decoded: lambdaDecodedParts(p.record, deps.lambdaSchemaRegistry),
    });
    routes.push({ plan: p, route: to, message });
    routeByPlan.set(p, to);
    return done("routed");
  }

  /** What is recorded of a routed record once its copy is out (`BatchAdapter.routeOf`). */
  function routeOf(p: Plan): string | undefined {
    const to = routeByPlan.get(p);
    return to && produced && p.outcome?.kind === "done" ? JSON.stringify(to) : undefined;
  }

  /**
   * A redelivery already routed (its dedup record says so): acked, and not produced again. If it went
   * onto the retry path, its key's later records in this batch follow it there, as they did the
   * first time (those already routed are recognised by their own records; the others must not
   * overtake its copy).
   */
  function recognised(p: Plan, recorded: string): RecordOutcome {
    telemetry.count(METRIC.routedRecognised);
    const to = parseRoute(recorded);
    if (to?.kind === "retry" && failureMode === "retry-topics" && deps.keyOrder)
      retryPath.block(keyLaneOf(p.record), to);
    return done("routed");
  }

  /** The earlier record of this record's key that is on the retry path, if any. */
  function follow(p: Plan): RecordOutcome | undefined {
    const leader =
      failureMode === "retry-topics" && deps.keyOrder ? retryPath.blockedBy(keyLaneOf(p.record)) : undefined;
    if (leader?.kind !== "retry") return undefined;
    telemetry.count(METRIC.kafkaFollowedKey);
    const why = `an earlier record of this key is on the retry path (${leader.topic}); following it to keep key order`;
    return route(p, { ...leader }, new KeyOnRetryPathError(why));
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
  async function handBack(p: Plan, error: DeliveryInProgressError, retryAtMs: number | undefined) {
    const waitMs = Math.min((retryAtMs ?? deps.now()) - deps.now(), deps.remainingMs() - deps.timeMarginMs);
    if (waitMs > 0) await deps.sleep(waitMs);
    telemetry.count(METRIC.inProgressElsewhere);
    log("record held by another invocation of the same delivery; handed back", p.record, {
      id: idOf(p),
      error: describeError(error),
    });
    return unfinished(error);
  }

  function fail(p: Plan, error: unknown, retryAtMs?: number): RecordOutcome | Promise<RecordOutcome> {
    if (error instanceof DeliveryInProgressError) return handBack(p, error, retryAtMs);
    const view = p.record;
    const kind = classifyError(error);
    telemetry.count(kind === "permanent" ? METRIC.permanentFailures : METRIC.transientFailures);
    if (error instanceof InProgressElsewhereError) telemetry.count(METRIC.inProgressElsewhere);
    if (error instanceof SchemaRegistryUnavailableError) telemetry.count(METRIC.schemaRegistryUnavailable);
    log("record failed", view, { id: idOf(p), kind, error: describeError(error) });
    if (failureMode === "partial-batch" && kind === "transient") return unfinished(error);
    const baseTopic =
      rawHeader(view, CONTEXT_HEADERS.originalTopic) ?? topicRole(ladder, view.topic).baseTopic;
    // A record held elsewhere, or one whose schema registry cannot answer, has not failed: it goes
    // round the ladder again without using up a rung (never dead-lettered for that alone).
    const errorKind = error instanceof InProgressElsewhereError || usesNoAttempt(error) ? "contended" : kind;
    const to = routeFailure({ ladder, baseTopic, previousRetryCount: previousRetryCount(view), errorKind });
    if (failureMode === "partial-batch" && to.kind === "retry") return unfinished(error);
    if (to.kind === "retry" && deps.keyOrder) retryPath.block(keyLaneOf(view), to);
    return route(p, to, error);
  }

  /**
   * Everything routed goes out in one produce request (order within each topic is batch order, so a
   * key's records keep their order on the retry topic). If it fails, nothing routed is acked.
   */
  async function produce(): Promise<void> {
    produced = routes.length === 0;
    if (produced) return;
    const byTopic = new Map<string, OutgoingMessage[]>();
    for (const r of routes) byTopic.set(r.route.topic, [...(byTopic.get(r.route.topic) ?? []), r.message]);
    try {
      const sent = deps.producer.sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
      await (deps.deadline ? beforeDeadline(sent, deps.deadline) : sent);
      produced = true;
      for (const r of routes)
        if (r.plan.outcome?.kind === "done")
          telemetry.count(r.route.kind === "retry" ? METRIC.retried : METRIC.deadLettered);
    } catch (error) {
      telemetry.count(METRIC.parkFailures, routes.length);
      telemetry.logger.error(
        "could not produce to the retry / dead-letter topics; records will be redelivered",
        {
          consumer,
          topics: [...byTopic.keys()],
          records: routes.length,
          error: describeError(error),
        },
      );
      const why = new RouteProduceError("the retry / dead-letter produce failed", { cause: error });
      for (const r of routes) r.plan.outcome = unfinished(why);
    }
  }

  /** The partial batch response, or, with partial responses off, a throw that fails the batch whole. */
  function answer(plans: ReadonlyArray<Plan>, reportBatchItemFailures: boolean): KafkaBatchResponse {
    // The batch stopped before the produce (a bug outside the records): what was routed is not out.
    if (!produced && routes.length > 0) {
      const why = new RouteProduceError("the batch stopped before the retry / dead-letter produce");
      for (const r of routes) if (r.plan.outcome?.kind === "done") r.plan.outcome = unfinished(why);
    }
    const views = unfinishedOf(plans).map((u) => u.record);
    if (views.length > 0) telemetry.count(METRIC.kafkaReportedUnfinished, views.length);
    const response = kafkaBatchResponse(views);
    if (views.length > 0 && !reportBatchItemFailures) {
      const which = response.batchItemFailures.map(
        (f) => `${f.itemIdentifier.partition}@${f.itemIdentifier.offset}`,
      );
      throw new KafkaBatchIncompleteError(
        `${views.length} of ${plans.length} records are unfinished (${which.join(", ")}); failing the batch so Lambda retries it`,
      );
    }
    return response;
  }

  /** A retry-topic record waits until it is due, or is left for a redelivery when it will not be in time. */
  async function untilDue(
    view: KafkaRecordView,
    remainingMs: () => number,
  ): Promise<RecordOutcome | undefined> {
    const role = topicRole(ladder, view.topic);
    if (role.kind !== "retry") return undefined;
    const due = dueDecision({
      recordTimestampMs: view.timestamp,
      delayMs: role.delayMs,
      nowMs: deps.now(),
      remainingMs: remainingMs(),
      reserveMs: deps.timeMarginMs,
      ...(deps.maxDueWaitMs !== undefined ? { maxWaitMs: deps.maxDueWaitMs } : {}),
    });
    if (due.kind === "not-yet") {
      // Each hand-back uses one of the mapping's finite retry attempts (and once they are gone,
      // Lambda sends the record to the dead-letter topic), so first wait all this invocation may:
      // a record of a rung of d is then handed back at most ⌈d ÷ (timeout − margin)⌉ times, what
      // the construct sizes MaximumRetryAttempts for (`kafkaWaitHandBacks` in lib/cdk/rules.ts).
      const budget = Math.min(
        remainingMs() - deps.timeMarginMs,
        deps.maxDueWaitMs ?? Number.POSITIVE_INFINITY,
      );
      if (budget > 0) await deps.sleep(budget);
      telemetry.count(METRIC.kafkaNotYetDue);
      return unfinished(new NotYetDueError(`not due for another ${due.dueAtMs - deps.now()} ms`));
    }
    if (due.kind === "wait") await deps.sleep(due.waitMs);
    return undefined;
  }

  return { follow, fail, untilDue, produce, answer, describe, routeOf, recognised };
}
