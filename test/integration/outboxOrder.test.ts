import { Logger } from "@aws-lambda-powertools/logger";
import { DynamoDBClient, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, DeleteQueueCommand } from "@aws-sdk/client-sqs";
import { createTelemetry } from "reliable-consumers";
import {
  createInboxOutbox,
  createOutboxRelay,
  createOutboxSweeper,
  discardParked,
  requeueParked,
} from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, describe, expect, it, vi } from "vitest";
import { pendingShard } from "../../lib/outbox/outboxEvent.ts";
import { createOutboxPublisher } from "../../lib/outbox/publisher.ts";
import { OUTBOX_DEFAULTS } from "../../lib/outbox/schema.ts";
import { FIFO_ID_PATTERN } from "../../lib/sqs/sqsLimits.ts";
import { type AwsGateway, startAwsGateway } from "../../local/src/enforcement/awsGateway.ts";
import { createDenialLog } from "../../local/src/enforcement/denials.ts";
import { createAppTable } from "../../local/src/services/dynamodb/appTable.ts";
import { deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { names } from "../support/names.ts";
import { byPrefix, envelopeOf, receiveAll, scanAll, streamTrigger } from "../support/outboxHarness.ts";

/**
 * Order per aggregate on every path that publishes (docs/outbox.md, "Order per aggregate"): no
 * event of an aggregate leaves while an older one is still pending or parked, whether the older
 * one was dropped by a stream mapping that gave up, parked, or requeued.
 */
const name = names(import.meta.url);
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const tables: string[] = [];
const queues: string[] = [];

afterAll(async () => {
  await Promise.all(tables.map((t) => deleteTable(ddb, t)));
  await Promise.all(queues.map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl })).catch(() => {})));
});

async function appTable(what: string) {
  const table = name(what);
  tables.push(table);
  return { table, streamArn: await createAppTable(ddb, table) };
}
async function queue(what: string, maximumMessageSize?: number) {
  const fifo = what.endsWith(".fifo");
  const out = await sqs.send(
    new CreateQueueCommand({
      QueueName: name(what),
      Attributes: {
        ...(fifo ? { FifoQueue: "true" } : {}),
        ...(maximumMessageSize ? { MaximumMessageSize: String(maximumMessageSize) } : {}),
      },
    }),
  );
  queues.push(out.QueueUrl!);
  return out.QueueUrl!;
}
const bodies = async (url: string) => (await receiveAll(sqs, url)).map((m) => m.Body);
const minAgeMs = 60_000;

/** A unit of work on `table` that stages to `sqs:<queueUrl>`, with a clock the test moves on. */
function clockedOutbox(table: string, scope: string, queueUrl: string) {
  const clock = { ms: Date.now() };
  const now = () => clock.ms;
  const uow = createInboxOutbox({
    tableName: table,
    scope,
    client: ddb,
    defaultDestination: `sqs:${queueUrl}`,
    now,
  });
  return { uow, clock, now };
}

describe("order per aggregate", () => {
  it("a stream mapping that gave up on E1, E2: the relay holds E3 back, the sweeper sends E1, E2, E3 in order", async () => {
    const { table, streamArn } = await appTable("gaveup");
    const fifo = await queue("events.fifo");
    const { uow, clock, now } = clockedOutbox(table, "g", fifo);
    const write = (id: string, agg: string, v: string) =>
      uow.run(envelopeOf(id, {}), (tx) => {
        tx.publish({ aggregateType: "acct", aggregateId: agg, eventType: "Changed", payload: v });
      });
    // The destination is down (every SendMessageBatch fails) long enough for the mapping to give up.
    let down = true;
    const flaky = createSqsClient({ maxAttempts: 1 });
    flaky.middlewareStack.add(
      (next, context) => async (args) => {
        if (down && context.commandName === "SendMessageBatchCommand")
          throw Object.assign(new Error("connection refused"), { name: "NetworkingError" });
        return next(args);
      },
      { step: "initialize", name: "brokerDown" },
    );
    const relay = createOutboxRelay({
      tableName: table,
      publisher: createOutboxPublisher({ sqs: flaky }),
      now,
    });
    const trigger = streamTrigger(streamArn, relay.handler, { maximumRetryAttempts: 1 });
    await write("a1", "A", "A1");
    await write("a2", "A", "A2");
    expect((await trigger.drain()).discarded).toBe(2); // E1, E2 dropped from the stream: still pending

    down = false;
    clock.ms += 1_000;
    await write("a3", "A", "A3");
    await write("b1", "B", "B1");
    await trigger.drain();
    // B has nothing older waiting: out at once. A's E3 must not overtake E1 and E2.
    expect(await bodies(fifo)).toEqual(["B1"]);
    expect(relay.lastReport?.deferred).toBe(1);

    clock.ms += minAgeMs + 1_000;
    const sweeper = createOutboxSweeper({
      tableName: table,
      client: ddb,
      minAgeMs,
      now,
      publisherOptions: { sqs },
    });
    expect(await sweeper.sweep()).toMatchObject({ republished: 3, held: 0, pendingCount: 0 });
    expect(await bodies(fifo)).toEqual(["A1", "A2", "A3"]);
  });

  it("a parked event holds its aggregate back on the relay and the sweeper until it is requeued; discard releases it", async () => {
    const { table, streamArn } = await appTable("parked");
    const fifo = await queue("events.fifo");
    const { uow, clock, now } = clockedOutbox(table, "p", fifo);
    let e1 = "";
    await uow.run(envelopeOf("p1", {}), (tx) => {
      e1 = tx.publish({
        aggregateType: "acct",
        aggregateId: "A",
        eventType: "E",
        payload: "A1",
        destination: "nowhere",
      });
      tx.publish({ aggregateType: "acct", aggregateId: "B", eventType: "E", payload: "B1" });
    });
    await uow.run(envelopeOf("p2", {}), (tx) => {
      tx.publish({ aggregateType: "acct", aggregateId: "A", eventType: "E", payload: "A2" });
    });
    const relay = createOutboxRelay({ tableName: table, now });
    const trigger = streamTrigger(streamArn, relay.handler);
    const stats = await trigger.drain();
    expect(stats.discarded).toBe(0);
    // E1 parked (no such destination); A2, in the same batch, must not go out ahead of it.
    expect(await bodies(fifo)).toEqual(["B1"]);
    const items = byPrefix(await scanAll(ddb, table), "OUTBOX#acct#A");
    expect(items.filter((i) => i.parkedAt !== undefined).map((i) => i.eventId?.S)).toEqual([e1]);
    expect(items.filter((i) => i.pending !== undefined).map((i) => i.payload?.S)).toEqual(["A2"]);

    // The sweeper keeps the rule too: A2 stays pending behind the parked E1.
    clock.ms += minAgeMs + 1_000;
    const sweeper = createOutboxSweeper({ tableName: table, client: ddb, minAgeMs, now });
    expect(await sweeper.sweep()).toMatchObject({ republished: 0, held: 1, pendingCount: 1 });
    expect(await bodies(fifo)).toEqual([]);

    // After the fix: requeued with a destination that exists, E1 goes first, then A2 (requeued
    // events are pending "now", so A2 is older in the pending index: the sweeper still waits).
    const key = { pk: "OUTBOX#acct#A", sk: `EVENT#${e1}` };
    expect(
      await requeueParked(ddb, table, key, {
        shard: pendingShard("acct", "A", OUTBOX_DEFAULTS.pendingShards),
        destination: `sqs:${fifo}`,
        now: clock.ms,
      }),
    ).toBe(true);
    expect(await sweeper.sweep()).toMatchObject({ republished: 0, held: 1 });
    clock.ms += minAgeMs + 1_000;
    await sweeper.sweep();
    await sweeper.sweep();
    expect(await bodies(fifo)).toEqual(["A1", "A2"]);

    // Giving a parked event up for good releases the aggregate.
    let c1 = "";
    await uow.run(envelopeOf("p3", {}), (tx) => {
      c1 = tx.publish({
        aggregateType: "acct",
        aggregateId: "C",
        eventType: "E",
        payload: "C1",
        destination: "nowhere",
      });
    });
    await uow.run(envelopeOf("p4", {}), (tx) => {
      tx.publish({ aggregateType: "acct", aggregateId: "C", eventType: "E", payload: "C2" });
    });
    await trigger.drain();
    clock.ms += minAgeMs + 1_000;
    expect(await sweeper.sweep()).toMatchObject({ republished: 0, held: 1 });
    expect(
      await discardParked(ddb, table, { pk: "OUTBOX#acct#C", sk: `EVENT#${c1}` }, { now: clock.ms }),
    ).toBe(true);
    expect(await sweeper.sweep()).toMatchObject({ republished: 1, held: 0, pendingCount: 0 });
    expect(await bodies(fifo)).toEqual(["C2"]);
  });

  it("an event too large even to park is parked as a reference; its shard moves on and its aggregate waits", async () => {
    const { table, streamArn } = await appTable("toolarge");
    const small = await queue("small.fifo", 1_024); // rejects the event
    const parking = await queue("parking", 2_048); // rejects the event's whole image
    const uow = createInboxOutbox({
      tableName: table,
      scope: "t",
      client: ddb,
      defaultDestination: `sqs:${small}`,
    });
    let big = "";
    await uow.run(envelopeOf("t1", {}), (tx) => {
      big = tx.publish({
        aggregateType: "doc",
        aggregateId: "A",
        eventType: "E",
        payload: "x".repeat(3_000),
      });
    });
    await uow.run(envelopeOf("t2", {}), (tx) => {
      tx.publish({ aggregateType: "doc", aggregateId: "A", eventType: "E", payload: "A2" });
      tx.publish({ aggregateType: "doc", aggregateId: "B", eventType: "E", payload: "B1" });
    });
    const relay = createOutboxRelay({ tableName: table, parkingQueueUrl: parking });
    const stats = await streamTrigger(streamArn, relay.handler, { maximumRetryAttempts: 2 }).drain();
    expect(stats.discarded).toBe(0); // the shard was never blocked
    expect(await bodies(small)).toEqual(["B1"]);
    const parked = (await receiveAll(sqs, parking)).map(
      (m) => JSON.parse(m.Body!) as Record<string, unknown>,
    );
    expect(parked).toHaveLength(1);
    expect(parked[0]).toMatchObject({
      kind: "outbox-parked-ref",
      key: { pk: "OUTBOX#doc#A", sk: `EVENT#${big}` },
      context: { "x-message-id": big },
    });
    const item = await ddb.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: "OUTBOX#doc#A" }, sk: { S: `EVENT#${big}` } } }),
    );
    expect(item.Item?.parkedAt).toBeDefined();
    expect(item.Item?.payload?.S).toHaveLength(3_000); // nothing lost: the item is still there
    const pending = byPrefix(await scanAll(ddb, table), "OUTBOX#doc#A").filter(
      (i) => i.pending !== undefined,
    );
    expect(pending.map((i) => i.payload?.S)).toEqual(["A2"]);
  });

  it("the sweeper parks an event too large even to park as a reference too, instead of retrying it every run", async () => {
    const { table } = await appTable("toolarge-sweep");
    const small = await queue("small2.fifo", 1_024);
    const parking = await queue("parking2", 2_048);
    const { uow, clock, now } = clockedOutbox(table, "s", small);
    let big = "";
    await uow.run(envelopeOf("s1", {}), (tx) => {
      big = tx.publish({
        aggregateType: "doc",
        aggregateId: "A",
        eventType: "E",
        payload: "y".repeat(3_000),
      });
      tx.publish({ aggregateType: "doc", aggregateId: "B", eventType: "E", payload: "B1" });
    });
    await uow.run(envelopeOf("s2", {}), (tx) => {
      tx.publish({ aggregateType: "doc", aggregateId: "A", eventType: "E", payload: "A2" });
    });
    clock.ms += minAgeMs + 1_000;
    const sweeper = createOutboxSweeper({
      tableName: table,
      client: ddb,
      minAgeMs,
      now,
      parkingQueueUrl: parking,
    });
    expect(await sweeper.sweep()).toMatchObject({
      republished: 1,
      parked: 1,
      failed: 0,
      held: 1,
      pendingCount: 1,
    });
    expect(await bodies(small)).toEqual(["B1"]);
    const parked = (await receiveAll(sqs, parking)).map(
      (m) => JSON.parse(m.Body!) as Record<string, unknown>,
    );
    expect(parked).toMatchObject([
      { kind: "outbox-parked-ref", key: { pk: "OUTBOX#doc#A", sk: `EVENT#${big}` } },
    ]);
    // The next run does not try the parked event again, and A2 still waits behind it.
    expect(await sweeper.sweep()).toMatchObject({ republished: 0, parked: 0, failed: 0, held: 1 });
  });

  it("logs a non-outbox INSERT under the error's name, NotAnOutboxItemError", async () => {
    const { table, streamArn } = await appTable("notoutbox");
    const logger = new Logger({ serviceName: "test", logLevel: "SILENT" });
    const error = vi.spyOn(logger, "error");
    const relay = createOutboxRelay({ tableName: table, telemetry: createTelemetry({ logger }) });
    await ddb.send(
      new PutItemCommand({ TableName: table, Item: { pk: { S: "ORDER#1" }, sk: { S: "ORDER" } } }),
    );
    await streamTrigger(streamArn, relay.handler, { filterPattern: undefined }).drain();
    expect(error).toHaveBeenCalledTimes(1);
    const [message, extra] = error.mock.calls[0]!;
    expect(message).toMatch(/^NotAnOutboxItemError: /);
    expect(extra).toMatchObject({ error: { type: "NotAnOutboxItemError" } });
  });
});

describe("issue 34 item 3: aggregate ids SQS refuses as a MessageGroupId", () => {
  let gateway: AwsGateway | undefined;
  afterAll(() => gateway?.stop());

  it("José García and a 200-character id publish in order, park on a FIFO parking queue, and go out after a requeue", async () => {
    // Through the local gateway, which refuses the group ids SQS refuses (fauxqs stores any string).
    gateway = await startAwsGateway({
      upstreams: { sqs: process.env.AWS_ENDPOINT_URL_SQS! },
      region: "us-east-1",
      accountId: "000000000000",
      denials: createDenialLog(),
    });
    const gsqs = createSqsClient({ endpoint: gateway.endpoint });
    const create = async (what: string) => {
      const url = (
        await gsqs.send(new CreateQueueCommand({ QueueName: name(what), Attributes: { FifoQueue: "true" } }))
      ).QueueUrl!;
      queues.push(url);
      return url;
    };
    const fifo = await create("ids.fifo");
    const parking = await create("ids-parking.fifo");
    const { table, streamArn } = await appTable("ids");
    const { uow, clock, now } = clockedOutbox(table, "ids", fifo);
    const jose = "José García";
    const long = "a".repeat(200);
    const plain = "order-7";
    const zoe = `Zoë ${"z".repeat(150)}`;
    const labels = new Map([
      [jose, "J"],
      [long, "L"],
      [plain, "P"],
      [zoe, "Z"],
    ]);
    let z1 = "";
    for (let v = 1; v <= 3; v++)
      await uow.run(envelopeOf(`ids-${v}`, {}), (tx) => {
        for (const agg of [jose, long, plain])
          tx.publish({
            aggregateType: "acct",
            aggregateId: agg,
            eventType: "E",
            payload: `${labels.get(agg)}${v}`,
          });
      });
    // Z1 cannot be published (no such destination): it is parked, and Z2 waits behind it.
    await uow.run(envelopeOf("ids-z", {}), (tx) => {
      z1 = tx.publish({
        aggregateType: "acct",
        aggregateId: zoe,
        eventType: "E",
        payload: "Z1",
        destination: "nowhere",
      });
      tx.publish({ aggregateType: "acct", aggregateId: zoe, eventType: "E", payload: "Z2" });
    });
    const relay = createOutboxRelay({
      tableName: table,
      publisher: createOutboxPublisher({ sqs: gsqs }),
      parkingQueueUrl: parking,
      sqs: gsqs,
      now,
    });
    const stats = await streamTrigger(streamArn, relay.handler).drain();
    expect(stats.discarded).toBe(0);
    const delivered = (await receiveAll(gsqs, fifo)).map((m) => ({
      aggregate: m.MessageAttributes?.["aggregate-id"]?.StringValue ?? "",
      group: m.Attributes?.MessageGroupId ?? "",
      body: m.Body,
    }));
    for (const agg of [jose, long, plain]) {
      const mine = delivered.filter((d) => d.aggregate === agg);
      expect(mine.map((d) => d.body)).toEqual([1, 2, 3].map((v) => `${labels.get(agg)}${v}`));
      // One group per aggregate, one SQS accepts, and the aggregate id itself when it is valid.
      expect(new Set(mine.map((d) => d.group)).size).toBe(1);
      expect(mine[0]!.group).toMatch(FIFO_ID_PATTERN);
    }
    const groupOf = (agg: string) => delivered.find((d) => d.aggregate === agg)?.group;
    expect(groupOf(jose)).toMatch(/^Jose_Garcia~[0-9a-f]{32}$/);
    expect(groupOf(plain)).toBe(plain);
    expect(delivered.filter((d) => d.aggregate === zoe)).toEqual([]);

    // The park itself went to the FIFO parking queue, grouped by the event's key.
    const parked = await receiveAll(gsqs, parking);
    expect(parked).toHaveLength(1);
    const body = JSON.parse(parked[0]!.Body!) as { key: { pk: string; sk: string } };
    expect(body.key.pk).toBe(`OUTBOX#acct#${zoe}`);
    expect(parked[0]!.Attributes?.MessageGroupId).toMatch(FIFO_ID_PATTERN);

    // Requeued after the fix, the sweeper sends Z1, then Z2, in the same group.
    expect(
      await requeueParked(ddb, table, body.key, {
        shard: pendingShard("acct", zoe, OUTBOX_DEFAULTS.pendingShards),
        destination: `sqs:${fifo}`,
        now: clock.ms,
      }),
    ).toBe(true);
    expect(body.key.sk).toBe(`EVENT#${z1}`);
    clock.ms += minAgeMs + 1_000;
    const sweeper = createOutboxSweeper({
      tableName: table,
      client: ddb,
      minAgeMs,
      now,
      publisherOptions: { sqs: gsqs },
    });
    await sweeper.sweep();
    await sweeper.sweep();
    const requeued = await receiveAll(gsqs, fifo);
    expect(requeued.map((m) => m.Body)).toEqual(["Z1", "Z2"]);
    expect(new Set(requeued.map((m) => m.Attributes?.MessageGroupId)).size).toBe(1);
    gsqs.destroy();
  });
});
