/**
 * The trace of one message: every step it took across the functions, assembled from what the run
 * already holds: the invocations (which function got it, what its response said), the functions'
 * log lines that name it, its copies in the queues (waiting, or parked in a DLQ with its context),
 * its dedup record, and the outbox events its handling wrote (published, parked) and their own
 * deliveries downstream. The message is followed through every id it is known by. Pure.
 */

import type { InvocationEntry, RecordRef } from "../services/lambda/invocationTrail.ts";
import type {
  DedupRecordDto,
  LogLineDto,
  OutboxEventDto,
  PeekedMessageDto,
  TraceStepDto,
} from "./consoleApi.ts";

export interface TraceFacts {
  readonly invocations: readonly InvocationEntry[];
  readonly logs: readonly LogLineDto[];
  readonly queued: ReadonlyArray<{ queue: string; isDlq: boolean; message: PeekedMessageDto }>;
  readonly outbox: ReadonlyArray<OutboxEventDto & { table: string }>;
  readonly dedup: ReadonlyArray<{ table: string; scope: string; key: string; record: DedupRecordDto }>;
}

const queuedIds = (m: PeekedMessageDto) => [
  m.messageId,
  m.context?.messageId,
  ...m.attributes.filter((a) => a.name === "message-id" || a.name === "x-message-id").map((a) => a.value),
];

/** Whether a record is this message: one of its ids, or (for the id asked about) its business key. */
function matches(r: RecordRef, related: ReadonlySet<string>, asked: string): boolean {
  return r.ids.some((id) => related.has(id)) || r.keys.includes(asked);
}

/**
 * Every id the message is known by: the one asked about, the ids of the records that carry it
 * (producer id, `x-message-id`), its copies in the queues, and the outbox events its handling wrote
 * (their ids, which their consumers downstream see as `message-id`).
 */
export function relatedIds(asked: string, facts: TraceFacts): Set<string> {
  const related = new Set([asked]);
  const add = (ids: ReadonlyArray<string | undefined>) => {
    let grew = false;
    for (const id of ids)
      if (id && !related.has(id)) {
        related.add(id);
        grew = true;
      }
    return grew;
  };
  for (let round = 0; round < 6; round++) {
    let grew = false;
    for (const inv of facts.invocations)
      for (const r of inv.records) if (matches(r, related, asked)) grew = add(r.ids) || grew;
    for (const q of facts.queued) {
      const ids = queuedIds(q.message);
      if (ids.some((id) => id && related.has(id))) grew = add(ids) || grew;
    }
    const keys = candidateKeys(asked, related, facts);
    for (const e of facts.outbox)
      if (related.has(e.eventId) || (e.causationId !== undefined && keys.has(e.causationId)))
        grew = add([e.eventId]) || grew;
    if (!grew) break;
  }
  return related;
}

/** The dedup keys the message may have had: its ids, and the scalar body values of its records. */
export function candidateKeys(asked: string, related: ReadonlySet<string>, facts: TraceFacts): Set<string> {
  const keys = new Set(related);
  for (const inv of facts.invocations)
    for (const r of inv.records) if (matches(r, related, asked)) for (const k of r.keys) keys.add(k);
  return keys;
}

function invocationSteps(inv: InvocationEntry, r: RecordRef, eventIds: ReadonlySet<string>): TraceStepDto[] {
  const started = inv.at - inv.durationMs;
  const base = { fn: inv.fn, requestId: inv.requestId };
  const downstream = r.ids.some((id) => eventIds.has(id));
  const steps: TraceStepDto[] = [];
  if (r.replayOf)
    steps.push({
      ...base,
      at: started,
      kind: "replayed",
      where: r.where,
      detail: `a copy sent again (replay) of ${r.replayOf}`,
    });
  steps.push({
    ...base,
    at: started,
    kind: downstream ? "consumed" : "received",
    where: `${r.source} ${r.where}`,
    detail: `${r.item} in a batch of ${inv.records.length} (request ${inv.requestId})`,
  });
  const outcome = !inv.ok
    ? `the function failed (${inv.error}): the whole batch is retried`
    : inv.failed.includes(r.item)
      ? "reported failed in the partial batch response: it comes back"
      : "done: the response did not report it failed";
  steps.push({
    ...base,
    at: inv.at,
    kind: "handler",
    where: inv.fn,
    detail: `handler ran ${inv.durationMs.toFixed(0)} ms; ${outcome}`,
  });
  return steps;
}

/** A log line in a few words: a JSON line's message and error, else the line. */
function logDetail(text: string): string {
  try {
    const doc = JSON.parse(text) as {
      level?: string;
      message?: string;
      error?: { name?: string; message?: string };
    };
    const error = doc.error ? `: ${doc.error.name ?? ""} ${doc.error.message ?? ""}`.trimEnd() : "";
    if (doc.message) return `${doc.level ?? ""} ${doc.message}${error}`.trim();
  } catch {
    // not JSON
  }
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

function storedSteps(
  facts: TraceFacts,
  related: ReadonlySet<string>,
  keys: ReadonlySet<string>,
  firstAt: number | undefined,
) {
  const steps: TraceStepDto[] = [];
  for (const q of facts.queued) {
    if (!queuedIds(q.message).some((id) => id && related.has(id))) continue;
    const m = q.message;
    steps.push({
      at: m.sentAt,
      kind: q.isDlq ? "parked" : "waiting",
      where: q.queue,
      detail: q.isDlq
        ? `in the DLQ ${q.queue} as ${m.messageId}: ${m.context?.lastError ?? "no x-last-error (moved by SQS's redrive)"}`
        : `${m.state} in ${q.queue} as ${m.messageId}, received ${m.receiveCount}×`,
    });
  }
  for (const d of facts.dedup) {
    const r = d.record;
    steps.push({
      ...(firstAt !== undefined ? { at: firstAt + 1 } : {}),
      kind: "claimed",
      where: d.table,
      detail: `dedup key ${d.scope}#${d.key}: ${r.status ?? "?"}, attempts ${r.attempts ?? "?"}${r.holder ? `, held by ${r.holder}` : ""}`,
    });
  }
  for (const e of facts.outbox) {
    if (!related.has(e.eventId) && !(e.causationId && keys.has(e.causationId))) continue;
    const where = e.table;
    steps.push({
      at: e.createdAt,
      kind: "outbox",
      where,
      detail: `event ${e.eventType} ${e.eventId} of ${e.aggregate}, to ${e.destination}`,
    });
    if (e.publishedAt)
      steps.push({
        at: e.publishedAt,
        kind: "published",
        where: e.destination,
        detail: `by the ${e.publishedBy ?? "relay"}`,
      });
    if (e.parkedAt)
      steps.push({
        at: e.parkedAt,
        kind: "parked",
        where,
        detail: `outbox event parked: ${e.lastError ?? "?"}`,
      });
  }
  return steps;
}

/** The steps, in time order (a step whose time is unknown last). */
export function traceSteps(asked: string, facts: TraceFacts): { related: string[]; steps: TraceStepDto[] } {
  const related = relatedIds(asked, facts);
  const keys = candidateKeys(asked, related, facts);
  const eventIds = new Set(facts.outbox.filter((e) => related.has(e.eventId)).map((e) => e.eventId));
  const steps: TraceStepDto[] = [];
  for (const inv of facts.invocations)
    for (const r of inv.records)
      if (matches(r, related, asked)) steps.push(...invocationSteps(inv, r, eventIds));
  for (const l of facts.logs) {
    if (l.level === "PLATFORM" || l.level === "METRICS") continue;
    if (![...related].some((id) => l.text.includes(id))) continue;
    const detail = logDetail(l.text);
    steps.push({ at: l.at, kind: /parked/i.test(detail) ? "parked" : "log", where: l.fn, fn: l.fn, detail });
  }
  const firstAt = steps.find((s) => s.kind === "received")?.at;
  steps.push(...storedSteps(facts, related, keys, firstAt));
  steps.sort((a, b) => (a.at ?? Number.POSITIVE_INFINITY) - (b.at ?? Number.POSITIVE_INFINITY));
  return { related: [...related], steps };
}
