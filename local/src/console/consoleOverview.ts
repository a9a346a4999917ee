/**
 * The Overview and Functions views, and the trace's gathering: what the app is (its materialised
 * resources, what is not emulated and what is done instead, as `local` prints it), the functions'
 * figures from their telemetry, and the facts a trace is assembled from.
 */
import type { LocalApp } from "../runtime/model.ts";
import type { consoleDedup } from "../services/dynamodb/consoleDedup.ts";
import type { consoleOutbox } from "../services/dynamodb/consoleOutbox.ts";
import type { InvocationTrail } from "../services/lambda/invocationTrail.ts";
import type { consoleQueues } from "../services/sqs/consoleQueues.ts";
import type {
  DedupRecordDto,
  FunctionSeriesDto,
  FunctionSummaryDto,
  OverviewDto,
  ResourceDto,
  TraceDto,
} from "./consoleApi.ts";
import { type ConsoleSources, dedupOf } from "./consoleSources.ts";
import { candidateKeys, relatedIds, type TraceFacts, traceSteps } from "./messageTrace.ts";

const route = (view: string, name: string) => `#/${view}/${encodeURIComponent(name)}`;

/** What triggers each function: queue names, `<table> stream`, topics, schedules. */
export function triggersOf(app: LocalApp, fn: string): string[] {
  return app.mappings
    .filter((m) => m.functionName === fn)
    .map((m) =>
      m.kind === "sqs"
        ? m.queue.name
        : m.kind === "dynamodb"
          ? `${m.table.name} stream`
          : m.kind === "kinesis"
            ? `Kinesis ${m.stream.name}`
            : m.topics.join(","),
    )
    .concat(
      app.schedules.filter((s) => s.targets.some((t) => t.functionName === fn)).map((s) => s.expression),
    );
}

function resourcesOf(app: LocalApp): ResourceDto[] {
  return [
    ...app.queues.map((q) => ({
      kind: "queue" as const,
      name: q.name,
      detail: q.importedArn ? `${q.url} (stand-in for the imported ${q.importedArn})` : q.url,
      link: route("queues", q.name),
    })),
    ...app.tables.map((t) => ({
      kind: "table" as const,
      name: t.name,
      detail: [t.streamArn ? "stream" : "", t.ttlAttribute ? `TTL ${t.ttlAttribute}` : ""]
        .filter(Boolean)
        .join(", "),
    })),
    ...app.topics.map((t) => ({
      kind: "topic" as const,
      name: t.name,
      detail: `${t.actualPartitions} partitions`,
      link: "#/kafka",
    })),
    ...app.functions.map((f) => ({
      kind: "function" as const,
      name: f.name,
      detail: `← ${triggersOf(app, f.name).join(", ") || "(no trigger)"}`,
      link: route("functions", f.name),
    })),
    ...app.schedules.map((s) => ({ kind: "schedule" as const, name: s.name, detail: s.expression })),
  ];
}

export function overviewOf(sources: ConsoleSources): OverviewDto {
  const endpoints = { ...sources.emulatorEnv, ...sources.toolEnv };
  const app = sources.app;
  if (!app)
    return { mode: "emulators", region: endpoints.AWS_REGION ?? "us-east-1", endpoints, resources: [] };
  return {
    mode: "app",
    stackName: app.stackName,
    region: app.region,
    endpoints,
    resources: resourcesOf(app),
    report: app.report,
    ...(sources.enforceIam !== undefined ? { enforceIam: sources.enforceIam } : {}),
  };
}

/** The Functions view: per function, its figures and its series, from the telemetry alone. */
export function consoleFunctions(sources: ConsoleSources) {
  const names = () => sources.app?.functions.map((f) => f.name) ?? [];
  return {
    summaries(): FunctionSummaryDto[] {
      const app = sources.app;
      if (!app || !sources.telemetry) return [];
      return app.functions.map((f) => ({
        name: f.name,
        logicalId: f.logicalId,
        triggers: triggersOf(app, f.name),
        ...sources.telemetry!.metrics(f.name).totals(),
      }));
    },
    series(name: string, now = Date.now()): FunctionSeriesDto | undefined {
      if (!sources.telemetry || !names().includes(name)) return undefined;
      return sources.telemetry.metrics(name).series(now);
    },
  };
}

interface TraceParts {
  readonly sources: ConsoleSources;
  readonly trail: InvocationTrail | undefined;
  readonly queues: ReturnType<typeof consoleQueues>;
  readonly outbox: ReturnType<typeof consoleOutbox>;
  readonly dedup: ReturnType<typeof consoleDedup>;
}

/** The dedup records of the message: each consumer that received it, for each key it may have had. */
async function dedupFacts(parts: TraceParts, asked: string, facts: TraceFacts): Promise<TraceFacts["dedup"]> {
  const related = relatedIds(asked, facts);
  const keys = [...candidateKeys(asked, related, facts)];
  const consumers = new Set(
    facts.invocations
      .filter((i) => i.records.some((r) => r.ids.some((id) => related.has(id)) || r.keys.includes(asked)))
      .map((i) => i.fn),
  );
  const found: Array<{ table: string; scope: string; key: string; record: DedupRecordDto }> = [];
  for (const fn of parts.sources.app?.functions ?? []) {
    const d = dedupOf(fn);
    if (!d || !consumers.has(fn.name)) continue;
    for (const key of keys) {
      const record = await parts.dedup.lookup(d.table, d.scope, key).catch(() => undefined);
      if (record) found.push({ table: d.table, scope: d.scope, key, record });
    }
  }
  return found;
}

/** The trace of one message (messageTrace.ts), from the run's invocations, logs, queues, outbox and dedup tables. */
export async function traceOf(parts: TraceParts, asked: string): Promise<TraceDto> {
  const tables = await parts.outbox.outboxTables().catch(() => []);
  const outbox = (
    await Promise.all(
      tables.map(async (table) => (await parts.outbox.events(table)).map((e) => ({ ...e, table }))),
    )
  ).flat();
  const facts: TraceFacts = {
    invocations: parts.trail?.entries() ?? [],
    logs: parts.sources.telemetry?.lines() ?? [],
    queued: await parts.queues.everyMessage(),
    outbox,
    dedup: [],
  };
  const withDedup = { ...facts, dedup: await dedupFacts(parts, asked, facts) };
  return { id: asked, ...traceSteps(asked, withDedup) };
}
