import type { AttributeValue, TransactWriteItem } from "@aws-sdk/client-dynamodb";
import type { AggregatePosition, OutboxEvent } from "./outboxEvent.ts";
import { OUTBOX_ATTR as A, OUTBOX_HEAD_SK, outboxPk, outboxSk } from "./schema.ts";

/**
 * The writer's half of order per aggregate: each event gets its place in its aggregate (`seq`
 * 1, 2, 3, … and its predecessor's sort key) in the same transaction that updates the aggregate's
 * head item (`OUTBOX#<type>#<id>` / `HEAD`), conditioned on the head as this container last saw it.
 * So the numbers have no gaps and no two events share one: a writer whose guess is stale fails the
 * condition, learns the head from the cancellation (ReturnValuesOnConditionCheckFailure: ALL_OLD,
 * no read) and tries again. A new aggregate (no head) needs no guess: the condition is that the head
 * does not exist. Concurrent writers of one aggregate serialise on its head.
 *
 * Why a head item and not the aggregate's own version or the sort key: the sort key (a UUIDv7) has
 * gaps, so a relay cannot tell from it that nothing lies between two events; an aggregate version
 * is the application's and not every unit of work writes one. The price: one more action in the
 * transaction (2 write units for the ~80-byte head), on every unit of work that publishes.
 */
export interface AggregateHead {
  readonly seq: number;
  readonly lastSk: string;
}

/** One aggregate's head update in a transaction, and the positions it gives its events. */
export interface HeadWrite {
  readonly pk: string;
  readonly action: TransactWriteItem;
  readonly head: AggregateHead;
}

/** The heads this container wrote or learned, bounded: a guess that the transaction checks. */
export interface AggregateHeads {
  /** Positions for `events` (staging order) and one head update per aggregate. */
  plan(
    events: ReadonlyArray<OutboxEvent>,
    tableName: string,
  ): { positions: AggregatePosition[]; heads: HeadWrite[] };
  /** After a commit: the heads as written. */
  committed(heads: ReadonlyArray<HeadWrite>): void;
  /** From a cancelled transaction: the head as it is (`undefined`: there is none). */
  learned(pk: string, item: Record<string, AttributeValue> | undefined): void;
}

export function createAggregateHeads(limit = 10_000): AggregateHeads {
  const known = new Map<string, AggregateHead>();
  const remember = (pk: string, head: AggregateHead | undefined) => {
    known.delete(pk);
    if (head) known.set(pk, head);
    if (known.size > limit) known.delete(known.keys().next().value!);
  };

  const headUpdate = (pk: string, before: AggregateHead | undefined, head: AggregateHead, table: string) => ({
    Update: {
      TableName: table,
      Key: { [A.pk]: { S: pk }, [A.sk]: { S: OUTBOX_HEAD_SK } },
      UpdateExpression: "SET #seq = :seq, #last = :last",
      ConditionExpression: before ? "#seq = :before" : "attribute_not_exists(#pk)",
      ExpressionAttributeNames: { "#seq": A.seq, "#last": A.lastSk, ...(before ? {} : { "#pk": A.pk }) },
      ExpressionAttributeValues: {
        ":seq": { N: String(head.seq) },
        ":last": { S: head.lastSk },
        ...(before ? { ":before": { N: String(before.seq) } } : {}),
      },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const,
    },
  });

  return {
    plan(events, tableName) {
      const positions: AggregatePosition[] = [];
      const heads = new Map<string, { before: AggregateHead | undefined; head: AggregateHead }>();
      for (const e of events) {
        const pk = outboxPk(e.aggregateType, e.aggregateId);
        const entry = heads.get(pk) ?? {
          before: known.get(pk),
          head: known.get(pk) ?? { seq: 0, lastSk: "" },
        };
        const sk = outboxSk(e.eventId);
        positions.push({ seq: entry.head.seq + 1, prevSk: entry.head.lastSk || undefined });
        heads.set(pk, { before: entry.before, head: { seq: entry.head.seq + 1, lastSk: sk } });
      }
      return {
        positions,
        heads: [...heads].map(([pk, { before, head }]) => ({
          pk,
          action: headUpdate(pk, before, head, tableName),
          head,
        })),
      };
    },
    committed(written) {
      for (const w of written) {
        const current = known.get(w.pk);
        if (!current || current.seq < w.head.seq) remember(w.pk, w.head);
      }
    },
    learned(pk, item) {
      const seq = Number(item?.[A.seq]?.N);
      const lastSk = item?.[A.lastSk]?.S;
      remember(pk, Number.isSafeInteger(seq) && lastSk !== undefined ? { seq, lastSk } : undefined);
    },
  };
}
