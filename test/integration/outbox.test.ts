import { DynamoDBClient, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DeleteQueueCommand } from "@aws-sdk/client-sqs";
import { PermanentError } from "reliable-consumers";
import { createInboxOutbox, createOutboxRelay } from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TransactionConflictError } from "../../lib/outbox/errors.ts";
import { createOutboxPublisher } from "../../lib/outbox/publisher.ts";
import { inboxPk } from "../../lib/outbox/schema.ts";
import { createAppTable } from "../../local/src/services/dynamodb/appTable.ts";
import { deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { names } from "../support/names.ts";
import {
  byPrefix,
  createQueue,
  envelopeOf,
  firstOccurrences,
  receiveAll,
  scanAll,
  streamTrigger,
} from "../support/outboxHarness.ts";
import { createQueueWithDlq, deleteQueues, sendAll, type TestQueue } from "../support/queues.ts";
import { describeWithoutSqs } from "../support/sqsSubstrate.ts";
import { recordingTelemetry } from "../support/telemetry.ts";

const name = names(import.meta.url);
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const tables: string[] = [];
const queueUrls: string[] = [];
const testQueues: TestQueue[] = [];

async function appTable(what: string) {
  const table = name(what);
  tables.push(table);
  const streamArn = await createAppTable(ddb, table);
  return { table, streamArn };
}
async function queue(what: string) {
  const url = await createQueue(sqs, name(what));
  queueUrls.push(url);
  return url;
}

afterAll(async () => {
  await Promise.all(tables.map((t) => deleteTable(ddb, t)));
  await Promise.all(
    queueUrls.map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl })).catch(() => {})),
  );
  await Promise.all(testQueues.map((q) => deleteQueues(sqs, q)));
});

describe("order-consumer → app table → relay → SQS", () => {
  let env: { table: string; streamArn: string };
  let orders: TestQueue;
  let events: string;
  beforeAll(async () => {
    env = await appTable("orders");
    orders = await createQueueWithDlq(sqs, name("in"));
    testQueues.push(orders);
    events = await queue("order-events");
  });

  it("N orders sent with duplicates give exactly N orders and N events, each event reaching SQS", async () => {
    process.env.APP_TABLE_NAME = env.table;
    process.env.ORDER_EVENTS_DESTINATION = `sqs:${events}`;
    const { handler } = await import("../../functions/order-consumer/handler.ts");
    const N = 30;
    const bodies = Array.from({ length: N }, (_, i) =>
      JSON.stringify({
        orderId: `o-${i}`,
        customerId: "c",
        amountCents: 100 + i,
        items: [{ sku: "s", qty: 1 }],
      }),
    );
    // Every third order is resent by the producer (a new SQS message with the same orderId).
    const sent = [...bodies, ...bodies.filter((_, i) => i % 3 === 0)];
    await sendAll(
      sqs,
      orders.url,
      sent.map((body) => ({ body })),
    );
    let received = 0;
    for (let i = 0; i < 20 && received < sent.length; i++) {
      const r = await invokeFromQueue(sqs, handler, {
        queueUrl: orders.url,
        queueArn: orders.arn,
        functionName: "order-consumer",
        waitSeconds: 0,
      });
      expect(r.failed).toEqual([]);
      received += r.received;
    }
    expect(received).toBe(sent.length);

    const items = await scanAll(ddb, env.table);
    expect(byPrefix(items, "ORDER#")).toHaveLength(N);
    expect(byPrefix(items, "INBOX#order-consumer#")).toHaveLength(N);
    const outbox = byPrefix(items, "OUTBOX#order#");
    expect(outbox).toHaveLength(N);
    const eventIds = new Set(outbox.map((i) => i.eventId!.S!));

    const relay = createOutboxRelay({ tableName: env.table, telemetry: recordingTelemetry() });
    await streamTrigger(env.streamArn, relay.handler).drain();
    const delivered = await receiveAll(sqs, events);
    const deliveredIds = new Set(delivered.map((m) => m.MessageAttributes?.["message-id"]?.StringValue));
    expect(deliveredIds).toEqual(eventIds);
    const first = delivered[0]!;
    expect(first.MessageAttributes?.["event-type"]?.StringValue).toBe("OrderPlaced");
    expect(first.MessageAttributes?.traceparent?.StringValue).toMatch(/^00-/);
    expect(JSON.parse(first.Body!).orderId).toMatch(/^o-/);

    // Published events left the pending index.
    const after = byPrefix(await scanAll(ddb, env.table), "OUTBOX#");
    expect(after.every((i) => i.pending === undefined && i.publishedBy?.S === "relay")).toBe(true);
  });
});

describeWithoutSqs("unit of work against DynamoDB Local", () => {
  let table: string;
  beforeAll(async () => {
    ({ table } = await appTable("uow"));
  });
  const get = async (pk: string, sk: string) =>
    (await ddb.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk }, sk: { S: sk } } }))).Item;

  it("commits marker + writes + events together; a redelivery applies nothing", async () => {
    const uow = createInboxOutbox({
      tableName: table,
      scope: "s1",
      client: ddb,
      defaultDestination: "kafka:x",
    });
    const work = (tx: Parameters<Parameters<typeof uow.run>[1]>[0]) => {
      tx.put({ Item: { pk: "ACC#1", sk: "ACC", balance: 10 } });
      tx.publish({ aggregateType: "acc", aggregateId: "1", eventType: "Opened", payload: { balance: 10 } });
    };
    const first = await uow.run(envelopeOf("m1", {}), work);
    expect(first.status).toBe("committed");
    const again = await uow.run(envelopeOf("m1", {}), work);
    expect(again.status).toBe("duplicate");
    const items = byPrefix(await scanAll(ddb, table), "OUTBOX#acc#1");
    expect(items).toHaveLength(1);
    expect((await get(inboxPk("s1", "m1"), "INBOX"))?.receivedAt).toBeDefined();
    // Another consumer (scope) processes the same message.
    const other = createInboxOutbox({
      tableName: table,
      scope: "s2",
      client: ddb,
      defaultDestination: "kafka:x",
    });
    expect(
      (await other.run(envelopeOf("m1", {}), (tx) => tx.put({ Item: { pk: "ACC#1b", sk: "ACC" } }))).status,
    ).toBe("committed");
  });

  it("concurrent deliveries of one message: one commits, the other is a duplicate or a transient conflict", async () => {
    const uow = createInboxOutbox({
      tableName: table,
      scope: "race",
      client: ddb,
      defaultDestination: "kafka:x",
    });
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, () =>
        uow.run(envelopeOf("same", {}), (tx) => {
          tx.publish({ aggregateType: "race", aggregateId: "1", eventType: "E", payload: 1 });
        }),
      ),
    );
    const committed = results.filter((r) => r.status === "fulfilled" && r.value.status === "committed");
    expect(committed).toHaveLength(1);
    for (const r of results) {
      if (r.status === "rejected") expect(r.reason).toBeInstanceOf(TransactionConflictError);
    }
    expect(byPrefix(await scanAll(ddb, table), "OUTBOX#race#")).toHaveLength(1);
  });

  it("a business condition failure is the handler's typed error, and nothing is written", async () => {
    await ddb.send(
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: "STOCK#1" }, sk: { S: "S" }, qty: { N: "0" } },
      }),
    );
    class OutOfStock extends PermanentError {}
    const uow = createInboxOutbox({
      tableName: table,
      scope: "biz",
      client: ddb,
      defaultDestination: "kafka:x",
    });
    const run = uow.run(envelopeOf("b1", {}), (tx) => {
      tx.put({ Item: { pk: "RES#1", sk: "R" } });
      tx.update(
        {
          Key: { pk: "STOCK#1", sk: "S" },
          UpdateExpression: "SET qty = qty - :one",
          ConditionExpression: "qty >= :one",
          ExpressionAttributeValues: { ":one": 1 },
        },
        { onConditionFailed: (old) => new OutOfStock(`stock is ${String(old?.qty)}`) },
      );
      tx.publish({ aggregateType: "res", aggregateId: "1", eventType: "Reserved", payload: {} });
    });
    await expect(run).rejects.toBeInstanceOf(OutOfStock);
    await expect(run).rejects.toThrow("stock is 0");
    expect(await get("RES#1", "R")).toBeUndefined();
    expect(await get(inboxPk("biz", "b1"), "INBOX")).toBeUndefined();
    expect(byPrefix(await scanAll(ddb, table), "OUTBOX#res#")).toHaveLength(0);
  });

  it("a crash mid-transaction leaves nothing half-written; an ack lost after the commit is a duplicate on redelivery", async () => {
    let mode: "crash-before" | "lose-ack" | "ok" = "crash-before";
    const faulty = new DynamoDBClient({ maxAttempts: 1 });
    faulty.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== "TransactWriteItemsCommand") return next(args);
        if (mode === "crash-before")
          throw Object.assign(new Error("connection reset"), { name: "TimeoutError" });
        const out = await next(args);
        if (mode === "lose-ack")
          throw Object.assign(new Error("socket hang up after commit"), { name: "TimeoutError" });
        return out;
      },
      { step: "initialize", name: "injectFault" },
    );
    const uow = createInboxOutbox({
      tableName: table,
      scope: "crash",
      client: faulty,
      defaultDestination: "kafka:x",
    });
    const work = (tx: Parameters<Parameters<typeof uow.run>[1]>[0]) => {
      tx.put({ Item: { pk: "CRASH#1", sk: "C" } });
      tx.publish({ aggregateType: "crash", aggregateId: "1", eventType: "E", payload: {} });
    };
    await expect(uow.run(envelopeOf("c1", {}), work)).rejects.toThrow("connection reset");
    expect(await get("CRASH#1", "C")).toBeUndefined();
    expect(await get(inboxPk("crash", "c1"), "INBOX")).toBeUndefined();
    expect(byPrefix(await scanAll(ddb, table), "OUTBOX#crash#")).toHaveLength(0);

    mode = "lose-ack";
    await expect(uow.run(envelopeOf("c1", {}), work)).rejects.toThrow("after commit");
    mode = "ok";
    expect((await uow.run(envelopeOf("c1", {}), work)).status).toBe("duplicate");
    expect(await get("CRASH#1", "C")).toBeDefined();
    expect(byPrefix(await scanAll(ddb, table), "OUTBOX#crash#")).toHaveLength(1);
  });
});

describe("relay to SQS FIFO and parking", () => {
  it("keeps each aggregate's order through a failed SendMessageBatch and the stream retry", async () => {
    const { table, streamArn } = await appTable("fifo");
    const fifo = await queue("events.fifo");
    const uow = createInboxOutbox({
      tableName: table,
      scope: "f",
      client: ddb,
      defaultDestination: `sqs:${fifo}`,
    });
    const aggregates = ["A", "B", "C", "D", "E"];
    for (let v = 1; v <= 6; v++) {
      for (const agg of aggregates) {
        await uow.run(envelopeOf(`${agg}-${v}`, {}), (tx) => {
          tx.publish({ aggregateType: "acct", aggregateId: agg, eventType: "Changed", payload: { agg, v } });
        });
      }
    }
    // The 2nd SendMessageBatch call fails as if the connection dropped.
    const flaky = createSqsClient({ maxAttempts: 1 });
    let calls = 0;
    flaky.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === "SendMessageBatchCommand" && ++calls === 2)
          throw Object.assign(new Error("connection reset"), { name: "NetworkingError" });
        return next(args);
      },
      { step: "initialize", name: "injectFault" },
    );
    const relay = createOutboxRelay({
      tableName: table,
      publisher: createOutboxPublisher({ sqs: flaky }),
    });
    const trigger = streamTrigger(streamArn, relay.handler, { batchSize: 12 });
    const stats = await trigger.drain();
    expect(stats.retries).toBeGreaterThan(0);
    expect(stats.discarded).toBe(0);

    const delivered = (await receiveAll(sqs, fifo)).map(
      (m) => JSON.parse(m.Body!) as { agg: string; v: number },
    );
    const perAgg = firstOccurrences(
      delivered,
      (d) => `${d.agg}-${d.v}`,
      (d) => d.agg,
    );
    for (const agg of aggregates) {
      expect(perAgg.get(agg)?.map((d) => d.v)).toEqual([1, 2, 3, 4, 5, 6]);
    }
    // Stronger: the raw FIFO sequence of each group never goes backwards (dedup id = event id).
    for (const agg of aggregates) {
      const raw = delivered.filter((d) => d.agg === agg).map((d) => d.v);
      expect(raw).toEqual([...raw].sort((a, b) => a - b));
    }
  });

  it("parks an event with an unknown destination and a malformed item, publishes the rest, and never drops a record", async () => {
    const { table, streamArn } = await appTable("park");
    const good = await queue("good");
    const parking = await queue("parking");
    const telemetry = recordingTelemetry();
    const uow = createInboxOutbox({
      tableName: table,
      scope: "p",
      client: ddb,
      defaultDestination: `sqs:${good}`,
    });
    await uow.run(envelopeOf("p1", {}), (tx) => {
      tx.publish({ aggregateType: "x", aggregateId: "1", eventType: "Good", payload: 1 });
      tx.publish({
        aggregateType: "x",
        aggregateId: "2",
        eventType: "Lost",
        payload: 2,
        destination: "nowhere",
      });
      tx.publish({ aggregateType: "x", aggregateId: "3", eventType: "Good", payload: 3 });
    });
    // A malformed outbox item (no payload) written by someone else, and a plain order item.
    await ddb.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          pk: { S: "OUTBOX#x#9" },
          sk: { S: "EVENT#bad" },
          pending: { S: "0" },
          pendingSince: { N: "1" },
        },
      }),
    );
    await ddb.send(
      new PutItemCommand({ TableName: table, Item: { pk: { S: "ORDER#1" }, sk: { S: "ORDER" } } }),
    );

    const relay = createOutboxRelay({ tableName: table, parkingQueueUrl: parking, telemetry });
    // No filter: the relay itself must skip what is not an outbox INSERT.
    await streamTrigger(streamArn, relay.handler, { filterPattern: undefined }).drain();
    expect((await receiveAll(sqs, good)).map((m) => m.Body)).toEqual(["1", "3"]);
    const parked = (await receiveAll(sqs, parking)).map(
      (m) => JSON.parse(m.Body!) as { context: Record<string, string>; key: { pk: string } },
    );
    expect(parked.map((p) => p.key.pk).sort()).toEqual(["OUTBOX#x#2", "OUTBOX#x#9"]);
    expect(parked.find((p) => p.key.pk === "OUTBOX#x#2")?.context["x-last-error"]).toMatch(
      /^UnknownDestinationError/,
    );
    expect(parked.find((p) => p.key.pk === "OUTBOX#x#9")?.context["x-last-error"]).toMatch(
      /^MalformedOutboxItemError/,
    );
    const items = byPrefix(await scanAll(ddb, table), "OUTBOX#");
    expect(items.filter((i) => i.parkedAt !== undefined)).toHaveLength(2);
    expect(items.filter((i) => i.pending !== undefined)).toHaveLength(0);
    expect(telemetry.counts.OutboxParked).toBe(2);
    expect(telemetry.counts.OutboxPublished).toBe(2);
    expect(telemetry.counts.OutboxRelaySkipped).toBeGreaterThan(0);
  });
});

describe("publisher batch sizing", () => {
  it("fills SendMessageBatch up to SQS's 1 MiB, not the old 256 KiB", async () => {
    const url = await queue("big");
    const publisher = createOutboxPublisher({ sqs });
    const events = Array.from({ length: 5 }, (_, i) => ({
      eventId: `e${i}`,
      aggregateType: "doc",
      aggregateId: `d${i}`,
      eventType: "Big",
      payload: String(i).repeat(250_000),
      contentType: "text/plain",
      schemaVersion: "1",
      headers: {},
      createdAt: Date.now(),
      destination: `sqs:${url}`,
      causationId: undefined,
    }));
    const outcomes = await publisher.publish(events);
    expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill("published"));
    // 4 × 250 KB fit one call under 1 MiB; the 5th goes in a second (256 KiB: one call each).
    expect(publisher.calls.sqsSendMessageBatch).toBe(2);
    expect((await receiveAll(sqs, url)).length).toBe(5);
  });
});
