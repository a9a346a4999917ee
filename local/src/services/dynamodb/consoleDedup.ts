/**
 * The Dedup view: look a key up in a dedup table (status, lease token and holder, lease expiry,
 * attempts, TTL): why a message was skipped as a duplicate, or why it waits for a lease. The
 * tables and scopes are the app's consumers' (DEDUP_TABLE_NAME, CONSUMER_NAME); under
 * `npm run emulators`, every table keyed by `pk` alone.
 */
import {
  type AttributeValue,
  DescribeTableCommand,
  GetItemCommand,
  ListTablesCommand,
  ScanCommand,
} from "@aws-sdk/client-dynamodb";
import { DEDUP_TABLE } from "reliable-consumers";
import type { DedupRecordDto, DedupTableDto } from "../../console/consoleApi.ts";
import { type ConsoleClients, dedupOf } from "../../console/consoleSources.ts";
import type { LocalApp } from "../../runtime/model.ts";

const D = DEDUP_TABLE.attributes;

const num = (v: AttributeValue | undefined) => (v?.N !== undefined ? Number(v.N) : undefined);

/** A dedup item as the page shows it. */
export function dedupRecordOf(item: Record<string, AttributeValue>): DedupRecordDto {
  const optional = {
    status: item[D.status]?.S,
    leaseToken: item[D.leaseToken]?.S,
    holder: item[D.holder]?.S,
    leaseExpiresAt: num(item[D.leaseExpiresAt]),
    attempts: num(item[D.attempts]),
    expiresAt: num(item[D.expiresAt]),
    payloadHash: item[D.payloadHash]?.S,
  };
  return {
    pk: item[D.pk]?.S ?? "",
    hasResult: item[D.result] !== undefined,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
}

export function consoleDedup(app: LocalApp | undefined, clients: ConsoleClients) {
  const fromApp = (): DedupTableDto[] => {
    const byTable = new Map<string, Set<string>>();
    for (const fn of app?.functions ?? []) {
      const d = dedupOf(fn);
      if (d) byTable.set(d.table, (byTable.get(d.table) ?? new Set()).add(d.scope));
    }
    return [...byTable].map(([table, scopes]) => ({ table, scopes: [...scopes].sort() }));
  };
  /** Tables keyed by `pk` alone (the dedup table's schema), for the bare emulators. */
  const discovered = async (): Promise<DedupTableDto[]> => {
    const names = (await clients.ddb.send(new ListTablesCommand({}))).TableNames ?? [];
    const out: DedupTableDto[] = [];
    for (const name of names) {
      const t = await clients.ddb.send(new DescribeTableCommand({ TableName: name }));
      const keys = t.Table?.KeySchema ?? [];
      if (keys.length === 1 && keys[0]?.AttributeName === D.pk) out.push({ table: name, scopes: [] });
    }
    return out;
  };
  return {
    tables: (): Promise<DedupTableDto[]> => (app ? Promise.resolve(fromApp()) : discovered()),
    async lookup(table: string, scope: string, key: string): Promise<DedupRecordDto | undefined> {
      const out = await clients.ddb.send(
        new GetItemCommand({
          TableName: table,
          Key: { [D.pk]: { S: DEDUP_TABLE.pk(scope, key) } },
          ConsistentRead: true,
        }),
      );
      return out.Item ? dedupRecordOf(out.Item) : undefined;
    },
    /** The first items of a table (to pick a key from). */
    async sample(table: string, limit = 25): Promise<DedupRecordDto[]> {
      const out = await clients.ddb.send(new ScanCommand({ TableName: table, Limit: limit }));
      return (out.Items ?? []).map(dedupRecordOf);
    },
  };
}
