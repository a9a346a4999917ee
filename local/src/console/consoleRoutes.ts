/**
 * The console's API, one table of reads (GET) and one of actions (POST), each a path pattern and
 * a small function over the console's parts. The actions' bodies are checked here: a wrong one is
 * a 400 that says what is wrong.
 */
import type { KafkaReplayRequest, RedriveRequest } from "./consoleApi.ts";
import { BadRequest, ConsoleNotFound } from "./consoleErrors.ts";
import { overviewOf } from "./consoleOverview.ts";
import type { ConsoleParts } from "./consoleServer.ts";

interface RouteInput {
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly body: unknown;
}

export interface Route {
  match(segments: readonly string[]): Record<string, string> | undefined;
  run(parts: ConsoleParts, input: RouteInput): unknown;
}

/** `api/queues/:name` → a route that matches `/api/queues/orders` with `{ name: "orders" }`. */
function at(pattern: string, run: Route["run"]): Route {
  const want = pattern.split("/");
  return {
    match(segments) {
      if (segments.length !== want.length) return undefined;
      const params: Record<string, string> = {};
      for (const [i, w] of want.entries()) {
        if (w.startsWith(":")) params[w.slice(1)] = segments[i]!;
        else if (w !== segments[i]) return undefined;
      }
      return params;
    },
    run,
  };
}

const required = (query: URLSearchParams, name: string): string => {
  const v = query.get(name);
  if (!v) throw new BadRequest(`?${name}= is required`);
  return v;
};

export const readRoutes: readonly Route[] = [
  at("api/overview", (p) => overviewOf(p.sources)),
  at("api/queues", (p) => p.queues.summaries()),
  at("api/queues/:name", (p, { params }) => p.queues.detail(params.name!)),
  at("api/functions", (p) => p.functions.summaries()),
  at("api/functions/:name", (p, { params, query }) => {
    const series = p.functions.series(params.name!);
    if (!series) throw new ConsoleNotFound(`no function ${params.name}`);
    // ?logs=0: the series only (the page's refresh; it has the lines from the live stream).
    return { series, logs: query.get("logs") === "0" ? [] : (p.sources.telemetry?.lines(params.name) ?? []) };
  }),
  at("api/denials", (p) => p.sources.denials?.all() ?? []),
  at("api/outbox", (p) => p.outbox.tables()),
  at("api/kafka", (p) => p.kafka.topics()),
  at("api/kafka/:topic/letters", (p, { params }) => p.kafka.letters(params.topic!)),
  at("api/dedup", (p) => p.dedup.tables()),
  at("api/dedup/lookup", async (p, { query }) => ({
    record:
      (await p.dedup.lookup(required(query, "table"), query.get("scope") ?? "", required(query, "key"))) ??
      null,
  })),
  at("api/dedup/sample", (p, { query }) => p.dedup.sample(required(query, "table"))),
  at("api/trace", (p, { query }) => p.trace(required(query, "id"))),
];

type Json = Record<string, unknown>;

function object(body: unknown): Json {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new BadRequest("the body is not an object");
  return body as Json;
}
function text(b: Json, name: string): string {
  const v = b[name];
  if (typeof v !== "string" || v === "") throw new BadRequest(`'${name}' must be a non-empty string`);
  return v;
}
function texts(b: Json, name: string): string[] | undefined {
  const v = b[name];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string"))
    throw new BadRequest(`'${name}' must be a list of strings`);
  return v as string[];
}
function seconds(b: Json, name: string): number | undefined {
  const v = b[name];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0)
    throw new BadRequest(`'${name}' must be a number ≥ 0`);
  return v;
}

/** The filter and dry-run flag both moves take. */
function moveOf(b: Json) {
  const ids = texts(b, "ids");
  const errorTypes = texts(b, "errorTypes");
  const olderThanSeconds = seconds(b, "olderThanSeconds");
  return {
    dryRun: b.dryRun === true,
    ...(ids ? { ids } : {}),
    ...(errorTypes ? { errorTypes } : {}),
    ...(olderThanSeconds !== undefined ? { olderThanSeconds } : {}),
  };
}

export const actionRoutes: readonly Route[] = [
  at("api/actions/redrive", (p, { body }) => {
    const b = object(body);
    const request: RedriveRequest = {
      queue: text(b, "queue"),
      ...moveOf(b),
      ...(typeof b.toQueue === "string" && b.toQueue ? { toQueue: b.toQueue } : {}),
    };
    return p.queues.redrive(request);
  }),
  at("api/actions/purge", (p, { body }) => p.queues.purge(text(object(body), "queue"))),
  at("api/actions/requeue", (p, { body }) => {
    const b = object(body);
    return p.outbox.requeue({ table: text(b, "table"), pk: text(b, "pk"), sk: text(b, "sk") });
  }),
  at("api/actions/replay", (p, { body }) => {
    const b = object(body);
    const request: KafkaReplayRequest = { topic: text(b, "topic"), ...moveOf(b) };
    return p.kafka.replay(request);
  }),
];
