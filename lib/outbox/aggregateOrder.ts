import { type AttributeValue, type DynamoDBClient, QueryCommand } from "@aws-sdk/client-dynamodb";
import { OUTBOX_ATTR as A, OUTBOX_SK_PREFIX } from "./schema.ts";

/**
 * Order per aggregate on every path that publishes (relay, sweeper, a requeued event): no event of
 * an aggregate leaves while an older event of that aggregate is still waiting, i.e. pending
 * (`pending` set: not yet published, for example dropped by a stream mapping that gave up) or
 * parked (`parkedAt` set: waiting for a fix and `requeueParked`, or for `discardParked`).
 *
 * The check reads the event's immediate predecessor: one Query on the aggregate's partition
 * (`pk = <aggregate> AND sk < <first event's sk>`, newest first, `Limit: 1`, strongly consistent).
 * Looking at the predecessor alone is enough, by induction: every path publishes an event only
 * when its predecessor is settled, so a settled predecessor means every older event is settled too.
 * (An operator who requeues an event that was already published replays it on purpose, out of line.)
 *
 * Why a query on the base table rather than a per-aggregate marker or sequence written in the unit
 * of work's transaction: the marker costs every unit of work a read (to learn the previous event)
 * and one more transactional write (2 WCU), and serialises concurrent writers of an aggregate on
 * it; this query costs the relay 1 RCU per aggregate per batch (an item of ≤ 4 KB), nothing on the
 * write path, needs no new item type or index, and also catches what no marker would record (an
 * event whose clear failed, a parked event, events written before this check existed). Why not the
 * pending index: GSIs are eventually consistent and are partitioned by shard, not by aggregate, so
 * the query would read every pending event of the shard. Only the first event of an aggregate in a
 * batch is checked: the later ones follow it in the same publish call, in order.
 */
export type PredecessorState =
  /** No older event, or the older one is published (or discarded, or gone with its TTL). */
  | { readonly state: "clear" }
  /** An older event is still pending or parked: this one must wait (stay pending). */
  | { readonly state: "waiting"; readonly blockingSk: string; readonly parked: boolean }
  /** The check itself failed: treat as a transient failure, never as clear. */
  | { readonly state: "unknown"; readonly error: unknown };

export interface EventKey {
  readonly pk: string;
  readonly sk: string;
}

/** The defaults of the per-aggregate order check. */
export const AGGREGATE_ORDER_DEFAULTS = {
  /**
   * Predecessor queries in flight at once: a batch of 100 events of 100 aggregates needs 100, and
   * the SDK's HTTP agent keeps 50 sockets; at ~5 ms a query on DynamoDB that is ~15 ms a batch.
   */
  concurrency: 32,
} as const;

/** The state of the immediate predecessor of `key` in its aggregate (its partition). */
export async function predecessorState(
  client: DynamoDBClient,
  tableName: string,
  key: EventKey,
): Promise<PredecessorState> {
  try {
    const out = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: "#pk = :pk AND #sk BETWEEN :lo AND :before",
        ExpressionAttributeNames: { "#pk": A.pk, "#sk": A.sk, "#pending": A.pending, "#parked": A.parkedAt },
        ExpressionAttributeValues: {
          ":pk": { S: key.pk },
          ":lo": { S: OUTBOX_SK_PREFIX },
          ":before": { S: justBefore(key.sk) },
        },
        ProjectionExpression: "#sk, #pending, #parked",
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const item: Record<string, AttributeValue> | undefined = out.Items?.[0];
    if (!item) return { state: "clear" };
    const parked = item[A.parkedAt] !== undefined;
    if (item[A.pending] === undefined && !parked) return { state: "clear" };
    return { state: "waiting", blockingSk: item[A.sk]?.S ?? "", parked };
  } catch (error) {
    return { state: "unknown", error };
  }
}

/**
 * The greatest string below `sk` that BETWEEN can take as an inclusive upper bound: `sk` without
 * its last character, then U+FFFF padding (event sort keys are ASCII). So `BETWEEN "EVENT#" AND it`
 * covers exactly the event sort keys smaller than `sk`.
 */
function justBefore(sk: string): string {
  const last = sk.charCodeAt(sk.length - 1);
  return `${sk.slice(0, -1)}${String.fromCharCode(last - 1)}\uffff`;
}

/** `predecessorState` for many keys (one per aggregate), a bounded number at a time. */
export async function predecessorStates(
  client: DynamoDBClient,
  tableName: string,
  keys: ReadonlyArray<EventKey>,
  concurrency: number = AGGREGATE_ORDER_DEFAULTS.concurrency,
): Promise<Map<string, PredecessorState>> {
  const out = new Map<string, PredecessorState>();
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++]!;
      out.set(key.pk, await predecessorState(client, tableName, key));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, keys.length) }, worker));
  return out;
}
