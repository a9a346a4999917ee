/**
 * The Kafka adapter's side of the stages: where a failed record goes (a retry topic, the
 * dead-letter topic, or back to Lambda in `partial-batch` mode) and key order on the retry path
 * (kafkaFailures.ts, keyLanes.ts), the one produce request for everything routed (routedCopies.ts), a
 * retry-topic record's wait to come due (retryDue.ts), and the answer. Built per invocation.
 */
import { type RecordPlan, unfinishedOf } from "../batch/batchPlan.ts";
import { unfinished } from "../batch/recordOutcome.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { KafkaBatchIncompleteError, RouteProduceError } from "./errors.ts";
import { describeRecord, failRecord, followKey, recognisedRoute } from "./kafkaFailures.ts";
import { createLaneGate, type LaneGate } from "./keyLanes.ts";
import type { LambdaSchemaRegistryMode } from "./lambdaDecoded.ts";
import type { KafkaRecordView } from "./mskEvent.ts";
import { type KafkaBatchResponse, kafkaBatchResponse } from "./partialResponse.ts";
import type { KafkaProducer, OutgoingMessage } from "./producer.ts";
import { untilDue } from "./retryDue.ts";
import type { RetryLadder, Route } from "./retryLadder.ts";
import { produceRoutes, recordedRoute } from "./routedCopies.ts";

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

/** A Kafka record's plan in the batch. */
export type KafkaPlan = RecordPlan<KafkaRecordView, unknown>;

/** A record routed on: its copy, produced with the others by `produceRoutes`. */
export interface RoutedCopy {
  readonly plan: KafkaPlan;
  readonly route: Route;
  readonly message: OutgoingMessage;
}

/** What every routing stage of one invocation gets: the deps, and the invocation's routing state. */
export interface RoutingContext extends KafkaRoutingDeps {
  /** Every record routed in this invocation, in batch order. */
  readonly routes: RoutedCopy[];
  readonly routeByPlan: Map<KafkaPlan, Route>;
  /** Once a key has a record on the retry path, its later records follow it there (key order). */
  readonly retryPath: LaneGate<Route>;
  /** Set once the produce went through: a routed record is acked only then. */
  produced: boolean;
}

/** The routing stages of one invocation, bound to its routing state. */
export function kafkaRouting(deps: KafkaRoutingDeps) {
  const ctx: RoutingContext = {
    ...deps,
    routes: [],
    routeByPlan: new Map(),
    retryPath: createLaneGate<Route>(),
    produced: false,
  };
  return {
    follow: (p: KafkaPlan) => followKey(ctx, p),
    fail: (p: KafkaPlan, error: unknown, retryAtMs?: number) => failRecord(ctx, p, error, retryAtMs),
    untilDue: (view: KafkaRecordView, remainingMs: () => number) => untilDue(ctx, view, remainingMs),
    produce: () => produceRoutes(ctx),
    answer: (plans: ReadonlyArray<KafkaPlan>, reportBatchItemFailures: boolean) =>
      answer(ctx, plans, reportBatchItemFailures),
    describe: (view: KafkaRecordView) => describeRecord(deps.consumer, view),
    routeOf: (p: KafkaPlan) => recordedRoute(ctx, p),
    recognised: (p: KafkaPlan, recorded: string) => recognisedRoute(ctx, p, recorded),
  };
}

/** The partial batch response, or, with partial responses off, a throw that fails the batch whole. */
function answer(
  ctx: RoutingContext,
  plans: ReadonlyArray<KafkaPlan>,
  reportBatchItemFailures: boolean,
): KafkaBatchResponse {
  const { routes, telemetry } = ctx;
  // The batch stopped before the produce (a bug outside the records): what was routed is not out.
  if (!ctx.produced && routes.length > 0) {
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
