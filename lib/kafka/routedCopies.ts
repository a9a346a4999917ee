/**
 * The copies of the records routed on (to a retry topic or the dead-letter topic): each is built
 * when its record is routed, and all go out in one produce request after the run. A routed record
 * is acked only once that produce went through; its route is then recorded with its dedup key
 * (`recordedRoute`), so a redelivery is recognised instead of routed again.
 */
import { beforeDeadline } from "../batch/lambdaDeadline.ts";
import { done, type RecordOutcome, unfinished } from "../batch/recordOutcome.ts";
import { describeError } from "../core/errors.ts";
import { METRIC } from "../observability/telemetry.ts";
import { RouteProduceError } from "./errors.ts";
import type { KafkaPlan, RoutingContext } from "./kafkaRouting.ts";
import { lambdaDecodedParts } from "./lambdaDecoded.ts";
import type { OutgoingMessage } from "./producer.ts";
import type { Route } from "./retryLadder.ts";
import { routedMessage } from "./routedMessage.ts";

/** The id the record deduplicates under, when it decoded. */
export const recordIdOf = (p: KafkaPlan) => (p.decoded.ok ? p.decoded.envelope.id : undefined);

/** Routes the record: its copy (with its failure context) waits for the produce; the record is done. */
export function routeRecord(ctx: RoutingContext, p: KafkaPlan, to: Route, error: unknown): RecordOutcome {
  const message = routedMessage({
    record: p.record,
    route: to,
    error,
    messageId: recordIdOf(p),
    consumer: ctx.consumer,
    now: new Date(ctx.now()),
    decoded: lambdaDecodedParts(p.record, ctx.lambdaSchemaRegistry),
  });
  ctx.routes.push({ plan: p, route: to, message });
  ctx.routeByPlan.set(p, to);
  return done("routed");
}

/** What is recorded of a routed record once its copy is out (`BatchAdapter.routeOf`). */
export function recordedRoute(ctx: RoutingContext, p: KafkaPlan): string | undefined {
  const to = ctx.routeByPlan.get(p);
  return to && ctx.produced && p.outcome?.kind === "done" ? JSON.stringify(to) : undefined;
}

/**
 * Everything routed goes out in one produce request (order within each topic is batch order, so a
 * key's records keep their order on the retry topic). If it fails, nothing routed is acked.
 */
export async function produceRoutes(ctx: RoutingContext): Promise<void> {
  const { routes, telemetry } = ctx;
  ctx.produced = routes.length === 0;
  if (ctx.produced) return;
  const byTopic = new Map<string, OutgoingMessage[]>();
  for (const r of routes) byTopic.set(r.route.topic, [...(byTopic.get(r.route.topic) ?? []), r.message]);
  try {
    const sent = ctx.producer.sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
    await (ctx.deadline ? beforeDeadline(sent, ctx.deadline) : sent);
    ctx.produced = true;
    for (const r of routes)
      if (r.plan.outcome?.kind === "done")
        telemetry.count(r.route.kind === "retry" ? METRIC.retried : METRIC.deadLettered);
  } catch (error) {
    telemetry.count(METRIC.parkFailures, routes.length);
    telemetry.logger.error(
      "could not produce to the retry / dead-letter topics; records will be redelivered",
      {
        consumer: ctx.consumer,
        topics: [...byTopic.keys()],
        records: routes.length,
        error: describeError(error),
      },
    );
    const why = new RouteProduceError("the retry / dead-letter produce failed", { cause: error });
    for (const r of routes) r.plan.outcome = unfinished(why);
  }
}
