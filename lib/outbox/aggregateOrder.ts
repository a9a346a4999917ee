import { type AttributeValue, type DynamoDBClient, QueryCommand } from "@aws-sdk/client-dynamodb";
import { createConsistentReader } from "../dedup/consistentReads.ts";
import type { AggregatePosition } from "./outboxEvent.ts";
import { OUTBOX_ATTR as A, OUTBOX_SK_PREFIX } from "./schema.ts";

/**
 * Order per aggregate on every path that publishes (relay, sweeper, a requeued event): no event of
 * an aggregate leaves while an older event of that aggregate is still waiting, i.e. pending
 * (`pending` set: not yet published, for example dropped by a stream mapping that gave up) or
 * parked (`parkedAt` set: waiting for a fix and `requeueParked`, or for `discardParked`).
 *
 * Looking at an event's immediate predecessor is enough, by induction: every path publishes an
 * event only when its predecessor is settled, so a settled predecessor means every older event is
 * settled too. (An operator who requeues an event that was already published replays it on
 * purpose, out of line.)
 *
 * **Where the order is in doubt, and only there, it costs a read.** The unit of work numbers each
 * aggregate's events 1, 2, 3, … with no gaps (aggregateHeads.ts), and each event names its
 * predecessor's sort key. So an aggregate's events in one batch are put in their own order, whatever
 * order the stream brought them in (it keeps order per item only, and every event is an item), and:
 * - an event right after the previous one in the batch (`seq` one more) follows it, with no read;
 * - the first of an aggregate in the batch, when this container published its predecessor (the
 *   relay's cache of the last sequence number it published per aggregate), goes with no read;
 * - anything else (a cold container, a restart, a gap: a record the mapping dropped after a
 *   throttle or its maximum age, an event another container or the sweeper published, a parked
 *   one) reads the predecessor by its key: one strongly consistent read (1 read unit), coalesced
 *   with the batch's other reads into BatchGetItem calls of 100.
 * - Events without numbers (written with `aggregateSequence: false`, or before it existed), and
 *   an aggregate's first numbered event (older unnumbered events may precede it), read the newest
 *   older event with a Query on the aggregate's partition (`sk <` the event's, newest first,
 *   `Limit 1`, strongly consistent), a bounded number in flight.
 *
 * A read that fails counts as a transient failure, never as "clear". Why not the pending index: a
 * GSI read is eventually consistent, and it is partitioned by shard, not by aggregate.
 */
export type PredecessorState =
  /** No older event, or the older one is published (or discarded, or gone with its TTL). */
  | { readonly state: "clear" }
  /** An older event is still pending or parked: this one must wait (stay pending). */
  | { readonly state: "waiting"; readonly blockingSk: string; readonly parked: boolean }
  /** The check itself failed: treat as a transient failure, never as clear. */
  | { readonly state: "unknown"; readonly error: unknown };

/** An outbox event's key. */
export interface EventKey {
  readonly pk: string;
  readonly sk: string;
}

/** The defaults of the per-aggregate order check. */
export const AGGREGATE_ORDER_DEFAULTS = {
  /**
   * Predecessor queries in flight at once (events without numbers): a batch of 100 events of 100
   * aggregates needs 100, and the SDK's HTTP agent keeps 50 sockets.
   */
  concurrency: 32,
  /** Aggregates whose last published sequence number the relay keeps per container. */
  cachedAggregates: 10_000,
} as const;

const stateOf = (item: Record<string, AttributeValue> | undefined, sk: string): PredecessorState => {
  if (!item) return { state: "clear" };
  const parked = item[A.parkedAt] !== undefined;
  if (item[A.pending] === undefined && !parked) return { state: "clear" };
  return { state: "waiting", blockingSk: item[A.sk]?.S ?? sk, parked };
};

/**
 * The state of the newest event older than `key` in its aggregate (its partition), by sort key.
 * `skipNumbered`: look past numbered events (for a first numbered event, whose predecessors are
 * the unnumbered ones; a numbered event with a lower sort key was numbered after it).
 */
export async function predecessorState(
  client: DynamoDBClient,
  tableName: string,
  key: EventKey,
  skipNumbered = false,
): Promise<PredecessorState> {
  try {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const out = await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: "#pk = :pk AND #sk BETWEEN :lo AND :before",
          ExpressionAttributeNames: {
            "#pk": A.pk,
            "#sk": A.sk,
            "#pending": A.pending,
            "#parked": A.parkedAt,
            "#seq": A.seq,
          },
          ExpressionAttributeValues: {
            ":pk": { S: key.pk },
            ":lo": { S: OUTBOX_SK_PREFIX },
            ":before": { S: justBefore(key.sk) },
          },
          ProjectionExpression: "#pk, #sk, #pending, #parked, #seq",
          ScanIndexForward: false,
          Limit: 1,
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      const item = out.Items?.[0];
      if (!item || !(skipNumbered && item[A.seq] !== undefined)) return stateOf(item, key.sk);
      start = out.LastEvaluatedKey;
    } while (start);
    return { state: "clear" };
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

/** `predecessorState` for many keys, a bounded number at a time; the answers keyed by `pk` NUL `sk`. */
export async function predecessorStates(
  client: DynamoDBClient,
  tableName: string,
  keys: ReadonlyArray<EventKey & { readonly skipNumbered?: boolean }>,
  concurrency: number = AGGREGATE_ORDER_DEFAULTS.concurrency,
): Promise<Map<string, PredecessorState>> {
  const out = new Map<string, PredecessorState>();
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++]!;
      out.set(`${key.pk}\u0000${key.sk}`, await predecessorState(client, tableName, key, key.skipNumbered));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, keys.length) }, worker));
  return out;
}

/** One event handed to the order check: its key, its place in its aggregate, and the caller's handle. */
export interface OrderedEvent<T> {
  readonly ref: T;
  readonly pk: string;
  readonly sk: string;
  readonly position: AggregatePosition | undefined;
}

/** What an event may do, in its aggregate's chain. */
export type Gate =
  /** Nothing older is waiting (its predecessor is settled): it goes (after the chain's earlier events). */
  | { readonly kind: "clear"; readonly read: boolean }
  /** Right after the chain's previous event: it goes when that one does. */
  | { readonly kind: "follows" }
  /** Its predecessor waits: it and the rest of its chain stay pending. */
  | { readonly kind: "waiting"; readonly blockingSk: string; readonly parked: boolean }
  /** The read failed: it and the rest of its chain are retried. */
  | { readonly kind: "unknown"; readonly error: unknown };

/** One aggregate's events of a batch, in the aggregate's order, each with its gate. */
export interface AggregateChain<T> {
  readonly pk: string;
  readonly events: ReadonlyArray<OrderedEvent<T>>;
  readonly gates: ReadonlyArray<Gate>;
}

/** The last sequence number this container published per aggregate (bounded; container scope). */
export interface PublishedSequences {
  get(pk: string): number | undefined;
  /** After `seq` of `pk` was published and cleared, with everything before it settled. Never moves back. */
  advance(pk: string, seq: number): void;
}

/**
 * Concurrent invocations in one process share it safely: a read and an update are each synchronous,
 * an entry only moves forward, and it moves only after the event was published and cleared, so an
 * invocation that reads a stale entry sees a gap and reads the table instead.
 */
export function createPublishedSequences(
  limit: number = AGGREGATE_ORDER_DEFAULTS.cachedAggregates,
): PublishedSequences {
  const last = new Map<string, number>();
  return {
    get: (pk) => last.get(pk),
    advance(pk, seq) {
      const current = last.get(pk);
      if (current !== undefined && current >= seq) return;
      last.delete(pk);
      last.set(pk, seq);
      if (last.size > limit) last.delete(last.keys().next().value!);
    },
  };
}

/** Unnumbered events first (by sort key: they are older), then numbered ones by their number. */
function byAggregateOrder<T>(a: OrderedEvent<T>, b: OrderedEvent<T>): number {
  if (a.position && b.position) return a.position.seq - b.position.seq;
  if (a.position || b.position) return a.position ? 1 : -1;
  return a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0;
}

/** Whether `e` comes right after `before` with nothing between (or both are unnumbered, as before numbers existed). */
function follows<T>(before: OrderedEvent<T>, e: OrderedEvent<T>): boolean {
  if (!before.position && !e.position) return true;
  return !!before.position && !!e.position && e.position.seq === before.position.seq + 1;
}

/** The order check of one table. */
export interface OrderCheck {
  chains<T>(events: ReadonlyArray<OrderedEvent<T>>): Promise<AggregateChain<T>[]>;
}

/** Options of `createOrderCheck`. */
export interface OrderCheckOptions {
  /** The relay's cache; none: every first event of an aggregate in a batch reads. */
  readonly published?: PublishedSequences | undefined;
  /**
   * Whether the table may hold events written without numbers: then an aggregate's first numbered
   * event reads the newest older one (a Query). `false`: it has no predecessor, no read. @default true
   */
  readonly unnumberedEvents?: boolean;
  /** Queries in flight at once. @default AGGREGATE_ORDER_DEFAULTS.concurrency */
  readonly concurrency?: number;
}

/** The order check of one table (relay and sweeper): chains, gates, the reads where order is in doubt. */
export function createOrderCheck(
  client: DynamoDBClient,
  tableName: string,
  options: OrderCheckOptions = {},
): OrderCheck {
  const { published, unnumberedEvents = true, concurrency = AGGREGATE_ORDER_DEFAULTS.concurrency } = options;
  /** An aggregate's first numbered event, in a table that holds only numbered ones: nothing before it. */
  const first = (e: OrderedEvent<unknown>) => !unnumberedEvents && e.position?.seq === 1;
  const names = { "#pk": A.pk, "#sk": A.sk, "#pending": A.pending, "#parked": A.parkedAt };
  const read = createConsistentReader(client, tableName, (k) => `${k[A.pk]?.S}\u0000${k[A.sk]?.S}`, {
    projection: "#pk, #sk, #pending, #parked",
    names,
  });
  const byKey = (pk: string, sk: string): Promise<PredecessorState> =>
    read({ [A.pk]: { S: pk }, [A.sk]: { S: sk } }).then(
      (item) => stateOf(item, sk),
      (error: unknown): PredecessorState => ({ state: "unknown", error }),
    );

  /** Reads the predecessor of each event whose gate is not known from the batch or the cache. */
  async function readGates<T>(doubtful: ReadonlyArray<OrderedEvent<T>>): Promise<PredecessorState[]> {
    const queries: Array<EventKey & { skipNumbered: boolean }> = [];
    const states = doubtful.map((e) => {
      const p = e.position;
      if (p && p.seq > 1 && p.prevSk !== undefined) return byKey(e.pk, p.prevSk);
      // A first numbered event looks past numbered ones to the unnumbered events before numbers began.
      queries.push({ pk: e.pk, sk: e.sk, skipNumbered: p?.seq === 1 });
      return undefined;
    });
    const queried = await predecessorStates(client, tableName, queries, concurrency);
    return Promise.all(states.map((s, i) => s ?? queried.get(`${doubtful[i]!.pk}\u0000${doubtful[i]!.sk}`)!));
  }

  return {
    async chains(events) {
      const groups = new Map<string, OrderedEvent<(typeof events)[number]["ref"]>[]>();
      for (const e of events) groups.set(e.pk, [...(groups.get(e.pk) ?? []), e]);
      const chains = [...groups].map(([pk, list]) => ({ pk, events: [...list].sort(byAggregateOrder) }));
      const gates: (Gate | undefined)[][] = chains.map((c) =>
        c.events.map((e, i) => {
          if (i > 0) return follows(c.events[i - 1]!, e) ? { kind: "follows" } : undefined;
          const seq = e.position?.seq;
          const known = seq !== undefined && (published?.get(c.pk) === seq - 1 || first(e));
          return known ? { kind: "clear", read: false } : undefined;
        }),
      );
      const doubtful = chains.flatMap((c, ci) =>
        c.events.flatMap((e, i) => (gates[ci]![i] ? [] : [{ ci, i, e }])),
      );
      const states = await readGates(doubtful.map((d) => d.e));
      doubtful.forEach(({ ci, i }, n) => {
        const s = states[n]!;
        gates[ci]![i] =
          s.state === "clear"
            ? { kind: "clear", read: true }
            : s.state === "waiting"
              ? { kind: "waiting", blockingSk: s.blockingSk, parked: s.parked }
              : { kind: "unknown", error: s.error };
      });
      return chains.map((c, ci) => ({ pk: c.pk, events: c.events, gates: gates[ci] as Gate[] }));
    },
  };
}
