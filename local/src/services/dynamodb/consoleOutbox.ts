/**
 * The Outbox view: per table with the outbox's pending index, the pending count and the age of the
 * oldest pending event (the sparse GSI, as the relay's backlog metric reads it), the parked events
 * with their error, and the requeue action, which is the library's `requeueParked`.
 */
import {
  type AttributeValue,
  DescribeTableCommand,
  ListTablesCommand,
  paginateScan,
} from "@aws-sdk/client-dynamodb";
import { OUTBOX_ENV } from "reliable-consumers/cdk";
import { OUTBOX_TABLE, requeueParked } from "reliable-consumers/outbox";
import type { OutboxEventDto, OutboxTableDto } from "../../console/consoleApi.ts";
import { ConsoleNotFound } from "../../console/consoleErrors.ts";
import type { ConsoleClients } from "../../console/consoleSources.ts";
import type { LocalApp } from "../../runtime/model.ts";

const A = OUTBOX_TABLE.attributes;

/** Items a view reads of one table at most (a local table; the view says when it stopped). */
const MAX_SCANNED = 20_000;

const num = (v: AttributeValue | undefined) => (v?.N !== undefined ? Number(v.N) : undefined);

/** An outbox item as the page shows it. */
export function outboxEventOf(item: Record<string, AttributeValue>): OutboxEventDto {
  const state = item[A.pending]
    ? "pending"
    : item[A.parkedAt]
      ? "parked"
      : item[A.discardedAt]
        ? "discarded"
        : "published";
  const optional = {
    lastError: item[A.lastError]?.S,
    causationId: item[A.causationId]?.S,
    publishedAt: num(item[A.publishedAt]),
    publishedBy: item[A.publishedBy]?.S,
    parkedAt: num(item[A.parkedAt]),
  };
  return {
    pk: item[A.pk]?.S ?? "",
    sk: item[A.sk]?.S ?? "",
    eventId: item[A.eventId]?.S ?? "",
    eventType: item[A.eventType]?.S ?? "",
    aggregate: `${item[A.aggregateType]?.S ?? "?"}/${item[A.aggregateId]?.S ?? "?"}`,
    destination: item[A.destination]?.S ?? "",
    createdAt: num(item[A.createdAt]) ?? 0,
    state,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
}

/** The Outbox view's data and its action. */
export function consoleOutbox(app: LocalApp | undefined, clients: ConsoleClients) {
  let tables: Promise<string[]> | undefined;
  /** The tables that have the outbox's pending index (asked of DynamoDB once). */
  const outboxTables = () => {
    tables ??= (async () => {
      const names = app
        ? app.tables.map((t) => t.name)
        : ((await clients.ddb.send(new ListTablesCommand({}))).TableNames ?? []);
      const described = await Promise.all(
        names.map(async (name) => {
          const t = await clients.ddb.send(new DescribeTableCommand({ TableName: name }));
          return t.Table?.GlobalSecondaryIndexes?.some((g) => g.IndexName === OUTBOX_TABLE.pendingIndex.name)
            ? name
            : undefined;
        }),
      );
      return described.filter((n): n is string => n !== undefined);
    })();
    const asked = tables;
    // The app's tables are fixed; the bare emulators' may come and go, so they are asked each time.
    if (!app) tables = undefined;
    asked.catch(() => {
      tables = undefined;
    });
    return asked;
  };
  /** Every outbox event of a table (inbox markers and business items are skipped). */
  const events = async (table: string): Promise<OutboxEventDto[]> => {
    const out: OutboxEventDto[] = [];
    let scanned = 0;
    for await (const page of paginateScan(
      { client: clients.ddb },
      {
        TableName: table,
        FilterExpression: "#t = :outbox",
        ExpressionAttributeNames: { "#t": A.itemType },
        ExpressionAttributeValues: { ":outbox": { S: OUTBOX_TABLE.itemTypes.outbox } },
      },
    )) {
      for (const item of page.Items ?? []) out.push(outboxEventOf(item));
      scanned += page.ScannedCount ?? 0;
      if (scanned >= MAX_SCANNED) break;
    }
    return out;
  };
  const shardsOf = (table: string) => {
    const fn = app?.functions.find(
      (f) => f.environment[OUTBOX_ENV.tableName] === table && f.environment[OUTBOX_ENV.pendingShards],
    );
    return Number(fn?.environment[OUTBOX_ENV.pendingShards] ?? OUTBOX_TABLE.defaults.pendingShards);
  };
  return {
    outboxTables,
    events,
    async tables(now = Date.now()): Promise<OutboxTableDto[]> {
      return Promise.all(
        (await outboxTables()).map(async (table) => {
          const all = await events(table);
          const pending = all.filter((e) => e.state === "pending");
          const oldest = Math.min(...pending.map((e) => e.createdAt));
          return {
            table,
            pending: pending.length,
            ...(Number.isFinite(oldest) ? { oldestPendingAgeMs: Math.max(0, now - oldest) } : {}),
            parked: all.filter((e) => e.state === "parked"),
            recent: all.sort((a, b) => b.createdAt - a.createdAt).slice(0, 50),
          };
        }),
      );
    },
    /** Back in line: `requeueParked`, at its first place (its creation time), for the sweeper to republish. */
    async requeue(request: { table: string; pk: string; sk: string }): Promise<{ requeued: boolean }> {
      if (!(await outboxTables()).includes(request.table))
        throw new ConsoleNotFound(`no outbox table ${request.table}`);
      const event = (await events(request.table)).find((e) => e.pk === request.pk && e.sk === request.sk);
      const requeued = await requeueParked(
        clients.ddb,
        request.table,
        { pk: request.pk, sk: request.sk },
        {
          pendingShards: shardsOf(request.table),
          ...(event ? { pendingSince: event.createdAt } : {}),
        },
      );
      return { requeued };
    },
  };
}
