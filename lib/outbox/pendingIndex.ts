/**
 * Reads of the sparse `pending-index` GSI: the due events of one shard (oldest first), and the
 * backlog (all pending events and the age of the oldest), which the sweeper reports as metrics.
 */
import { type AttributeValue, type DynamoDBClient, QueryCommand } from "@aws-sdk/client-dynamodb";
import { OUTBOX_ATTR as A, OUTBOX_PENDING_INDEX } from "./schema.ts";

/** A pending event the sweeper found due. */
export interface Due {
  readonly item: Record<string, AttributeValue>;
  readonly since: number;
  readonly sk: string;
}

/** Due events of one shard (pending since `cutoff` or before), oldest first, up to `limit`. */
export async function queryDue(
  client: DynamoDBClient,
  tableName: string,
  shard: string,
  cutoff: number,
  limit: number,
): Promise<{ items: Due[]; more: boolean }> {
  const items: Due[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const out = await client.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: OUTBOX_PENDING_INDEX,
        KeyConditionExpression: "#pending = :shard AND #since <= :cutoff",
        ExpressionAttributeNames: { "#pending": A.pending, "#since": A.pendingSince },
        ExpressionAttributeValues: { ":shard": { S: shard }, ":cutoff": { N: String(cutoff) } },
        ScanIndexForward: true,
        Limit: Math.min(limit - items.length, 500),
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of out.Items ?? []) {
      items.push({ item, since: Number(item[A.pendingSince]?.N ?? 0), sk: item[A.sk]?.S ?? "" });
    }
    start = out.LastEvaluatedKey;
  } while (start && items.length < limit);
  return { items, more: start !== undefined };
}

/** How many events of one shard are pending. */
async function countShard(client: DynamoDBClient, tableName: string, shard: string): Promise<number> {
  let count = 0;
  let start: Record<string, AttributeValue> | undefined;
  do {
    const out = await client.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: OUTBOX_PENDING_INDEX,
        KeyConditionExpression: "#pending = :shard",
        ExpressionAttributeNames: { "#pending": A.pending },
        ExpressionAttributeValues: { ":shard": { S: shard } },
        Select: "COUNT",
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    count += out.Count ?? 0;
    start = out.LastEvaluatedKey;
  } while (start);
  return count;
}

/** When the oldest pending event of a shard became pending (epoch ms), if one is. */
async function oldestOfShard(
  client: DynamoDBClient,
  tableName: string,
  shard: string,
): Promise<number | undefined> {
  const head = await client.send(
    new QueryCommand({
      TableName: tableName,
      IndexName: OUTBOX_PENDING_INDEX,
      KeyConditionExpression: "#pending = :shard",
      ExpressionAttributeNames: { "#pending": A.pending, "#since": A.pendingSince },
      ExpressionAttributeValues: { ":shard": { S: shard } },
      ProjectionExpression: "#since",
      ScanIndexForward: true,
      Limit: 1,
    }),
  );
  const since = head.Items?.[0]?.[A.pendingSince]?.N;
  return since === undefined ? undefined : Number(since);
}

/** The backlog over every shard: all pending events, any age, and the age of the oldest at `t`. */
export async function measurePending(
  client: DynamoDBClient,
  tableName: string,
  shards: number,
  t: number,
): Promise<{ pendingCount: number; oldestPendingAgeMs: number }> {
  const perShard = await Promise.all(
    Array.from({ length: shards }, async (_, s) => ({
      count: await countShard(client, tableName, String(s)),
      oldest: await oldestOfShard(client, tableName, String(s)),
    })),
  );
  const pendingCount = perShard.reduce((n, p) => n + p.count, 0);
  const oldests = perShard.flatMap((p) => (p.oldest === undefined ? [] : [p.oldest]));
  const oldestPendingAgeMs = oldests.length === 0 ? 0 : Math.max(0, t - Math.min(...oldests));
  return { pendingCount, oldestPendingAgeMs };
}
