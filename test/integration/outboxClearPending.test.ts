import { DynamoDBClient, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { requeueParked } from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pendingShard, resolveNewEvent, toOutboxItem } from "../../lib/outbox/outboxEvent.ts";
import { OUTBOX_ATTR as A, OUTBOX_DEFAULTS } from "../../lib/outbox/schema.ts";
import { clearPendingFenced, park } from "../../lib/outbox/settle.ts";
import { createAppTable } from "../../local/src/services/dynamodb/appTable.ts";
import { deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { names } from "../support/names.ts";

/**
 * The sweeper's clear of `pending` after a publish is fenced on the published image's
 * `pendingSince`, so a late clear never undoes what happened to the item since: a requeue, a park,
 * or its deletion. On DynamoDB Local.
 */
const name = names(import.meta.url);
const ddb = new DynamoDBClient({});
const table = name("app");
const shape = { retentionSeconds: 3600, pendingShards: OUTBOX_DEFAULTS.pendingShards };

beforeAll(async () => {
  await createAppTable(ddb, table);
});
afterAll(async () => {
  await deleteTable(ddb, table);
});

/** A pending outbox item, stored; returns the image a publisher would have read. */
async function pendingEvent(aggregateId: string, createdAt: number) {
  const event = resolveNewEvent(
    { aggregateType: "order", aggregateId, eventType: "OrderPlaced", payload: { aggregateId } },
    {
      now: createdAt,
      defaultDestination: "sqs:https://example.invalid/q",
      incomingTraceparent: undefined,
      causationId: undefined,
      ...shape,
    },
  );
  const item = toOutboxItem(event, shape);
  await ddb.send(new PutItemCommand({ TableName: table, Item: item }));
  return item;
}

const stored = async (image: Record<string, { S?: string }>) =>
  (
    await ddb.send(
      new GetItemCommand({
        TableName: table,
        Key: { [A.pk]: { S: image[A.pk]!.S! }, [A.sk]: { S: image[A.sk]!.S! } },
        ConsistentRead: true,
      }),
    )
  ).Item;

describe("clearPendingFenced (the sweeper's clear)", () => {
  it("clears published events in batches of 25: out of the pending index, stamped, with a TTL", async () => {
    const t = Date.now();
    const images = await Promise.all(Array.from({ length: 30 }, (_, i) => pendingEvent(`a${i}`, t - 1000)));
    expect(await clearPendingFenced(ddb, table, images, "relay", t)).toEqual({
      cleared: 30,
      superseded: 0,
      failed: 0,
    });
    for (const image of [images[0]!, images[29]!]) {
      const item = await stored(image);
      expect(item?.[A.pending]).toBeUndefined();
      expect(item?.[A.pendingSince]).toBeUndefined();
      expect(item?.[A.publishedAt]).toEqual({ N: String(t) });
      expect(item?.[A.publishedBy]).toEqual({ S: "relay" });
      expect(Number(item?.[A.expiresAt]?.N)).toBe(Math.floor(t / 1000) + 3600);
      expect(item?.[A.payload]).toEqual(image[A.payload]);
    }
    // The same clear again (a stream retry after the batch succeeded) changes nothing.
    expect(await clearPendingFenced(ddb, table, images.slice(0, 3), "sweeper", t + 5)).toEqual({
      cleared: 0,
      superseded: 3,
      failed: 0,
    });
    expect((await stored(images[0]!))?.[A.publishedBy]).toEqual({ S: "relay" });
  });

  it("leaves an event requeued after the publish pending, with its new destination", async () => {
    const t = Date.now();
    const image = await pendingEvent("requeued", t - 60_000);
    const key = { pk: image[A.pk]!.S!, sk: image[A.sk]!.S! };
    // Published from `image`, but before the clear lands an operator requeues it elsewhere.
    const ok = await requeueParked(ddb, table, key, {
      shard: pendingShard("order", "requeued", OUTBOX_DEFAULTS.pendingShards),
      destination: "sqs:https://example.invalid/fixed",
      now: t,
    });
    expect(ok).toBe(true);
    expect(await clearPendingFenced(ddb, table, [image], "relay", t + 1)).toEqual({
      cleared: 0,
      superseded: 1,
      failed: 0,
    });
    const item = await stored(image);
    expect(item?.[A.pending]).toBeDefined();
    expect(item?.[A.pendingSince]).toEqual({ N: String(t) });
    expect(item?.[A.destination]).toEqual({ S: "sqs:https://example.invalid/fixed" });
    expect(item?.[A.publishedAt]).toBeUndefined();
  });

  it("keeps a park by the other publisher, and does not re-create a deleted event", async () => {
    const t = Date.now();
    const parkedImage = await pendingEvent("parked", t - 60_000);
    await park(
      {
        key: { pk: parkedImage[A.pk]!.S!, sk: parkedImage[A.sk]!.S! },
        image: parkedImage,
        eventId: parkedImage[A.eventId]!.S,
        error: new Error("destination refused it"),
        source: "test",
        consumer: "sweeper",
      },
      { client: ddb, tableName: table, sqs: () => createSqsClient(), parkingQueueUrl: undefined, now: t },
    );
    const gone = toOutboxItem(
      resolveNewEvent(
        { aggregateType: "order", aggregateId: "gone", eventType: "OrderPlaced", payload: {} },
        {
          now: t,
          defaultDestination: "sqs:x",
          incomingTraceparent: undefined,
          causationId: undefined,
          ...shape,
        },
      ),
      shape,
    );
    expect(await clearPendingFenced(ddb, table, [parkedImage, gone], "relay", t + 1)).toEqual({
      cleared: 0,
      superseded: 2,
      failed: 0,
    });
    const parked = await stored(parkedImage);
    expect(parked?.[A.parkedAt]).toEqual({ N: String(t) });
    expect(parked?.[A.publishedAt]).toBeUndefined();
    expect(await stored(gone)).toBeUndefined();
  });
});
