import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, DeleteQueueCommand } from "@aws-sdk/client-sqs";
import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import {
  createInboxOutbox,
  createOutboxRelay,
  createOutboxSweeper,
  requeueParked,
} from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, describe, expect, it } from "vitest";
import { createOutboxPublisher } from "../../lib/outbox/publisher.ts";
import { OUTBOX_ATTR, OUTBOX_HEAD_SK } from "../../lib/outbox/schema.ts";
import { createAppTable } from "../../local/src/services/dynamodb/appTable.ts";
import { deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { names } from "../support/names.ts";
import {
  byPrefix,
  envelopeOf,
  headsOf,
  receiveAll,
  scanAll,
  streamTrigger,
} from "../support/outboxHarness.ts";
import { countRequests } from "../support/requestCounter.ts";

/**
 * Issue 24 item 1 and issue 26 item 5: each aggregate's events are numbered by the unit of work (a
 * head item in the same transaction), and the relay reads the table only where the order is in
 * doubt; an aggregate's events that arrive out of order in one batch go out in their own order.
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
async function fifoQueue(what: string) {
  const out = await sqs.send(
    new CreateQueueCommand({ QueueName: `${name(what)}.fifo`, Attributes: { FifoQueue: "true" } }),
  );
  queues.push(out.QueueUrl!);
  return out.QueueUrl!;
}
const bodies = async (url: string) => (await receiveAll(sqs, url)).map((m) => m.Body);

/** The stream's records as Lambda would deliver them, without relaying them: each call, the new ones. */
function recorder(streamArn: string): () => Promise<DynamoDBRecord[]> {
  let records: DynamoDBRecord[] = [];
  const poller = streamTrigger(streamArn, async (event) => {
    records.push(...event.Records);
    return { batchItemFailures: [] };
  });
  return async () => {
    await poller.drain();
    const out = records;
    records = [];
    return out;
  };
}
const batchOf = (records: DynamoDBRecord[]): DynamoDBStreamEvent => ({ Records: records });

function writer(table: string, destination: string, now?: () => number) {
  const uow = createInboxOutbox({
    tableName: table,
    scope: "seq",
    client: ddb,
    defaultDestination: destination,
    ...(now ? { now } : {}),
  });
  return (id: string, agg: string, payload: string, count = 1) =>
    uow.run(envelopeOf(id, {}), (tx) => {
      for (let i = 0; i < count; i++)
        tx.publish({
          aggregateType: "acct",
          aggregateId: agg,
          eventType: "E",
          payload: count > 1 ? `${payload}.${i}` : payload,
        });
    });
}

describe("numbered events (aggregateSequence)", () => {
  it("numbers each aggregate's events 1, 2, 3 with no gaps, across units, containers and concurrent writers", async () => {
    const { table } = await appTable("numbers");
    const destination = "kafka:unused";
    const a = writer(table, destination);
    const b = writer(table, destination); // another container: its guesses of the head start cold
    await a("m1", "X", "1");
    await a("m2", "X", "2", 2); // two events of X in one unit
    await b("m3", "X", "4"); // b guesses "new aggregate", learns the head from the cancellation, renumbers
    await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b)(`c${i}`, "X", `c${i}`)));
    const items = await scanAll(ddb, table);
    const events = byPrefix(items, "OUTBOX#acct#X").map((i) => ({
      seq: Number(i[OUTBOX_ATTR.seq]?.N),
      sk: i[OUTBOX_ATTR.sk]!.S!,
      prevSk: i[OUTBOX_ATTR.prevSk]?.S,
    }));
    const seqs = events.map((e) => e.seq).sort((x, y) => x - y);
    expect(seqs).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    // Each names its predecessor; the head names the last.
    const bySeq = new Map(events.map((e) => [e.seq, e]));
    for (const e of events) expect(e.prevSk).toBe(e.seq === 1 ? undefined : bySeq.get(e.seq - 1)!.sk);
    const [head] = headsOf(items, "OUTBOX#acct#X");
    expect(head?.sk?.S).toBe(OUTBOX_HEAD_SK);
    expect(head?.[OUTBOX_ATTR.seq]?.N).toBe("10");
    expect(head?.[OUTBOX_ATTR.lastSk]?.S).toBe(bySeq.get(10)!.sk);
  });

  it("an aggregate's events out of order in one batch go out in their own order, none deferred (issue 26 item 5)", async () => {
    const { table, streamArn } = await appTable("shuffled");
    const capture = recorder(streamArn);
    const fifo = await fifoQueue("shuffled");
    const write = writer(table, `sqs:${fifo}`);
    for (const v of ["A1", "A2", "A3", "A4"]) await write(v, "A", v);
    await write("B1", "B", "B1");
    const records = await capture();
    expect(records).toHaveLength(5);
    const relay = createOutboxRelay({
      tableName: table,
      client: ddb,
      publisher: createOutboxPublisher({ sqs }),
    });
    // The stream keeps order per item only: A4, A2, B1, A3, A1.
    const shuffled = [3, 1, 4, 2, 0].map((i) => records[i]!);
    expect(await relay.handler(batchOf(shuffled))).toEqual({ batchItemFailures: [] });
    expect(relay.lastReport).toMatchObject({ published: 5, deferred: 0 });
    // One read per aggregate (a cold container, first events): A1's and B1's predecessors.
    expect(relay.lastReport?.orderReads).toBe(2);
    const got = await bodies(fifo);
    expect(got.filter((v) => v?.startsWith("A"))).toEqual(["A1", "A2", "A3", "A4"]);
  });

  it("reads nothing for an event whose predecessor this container published; a gap or a cold container costs one read", async () => {
    const { table, streamArn } = await appTable("cache");
    const capture = recorder(streamArn);
    const fifo = await fifoQueue("cache");
    const write = writer(table, `sqs:${fifo}`);
    const relayClient = new DynamoDBClient({});
    const requests = countRequests(relayClient);
    const relay = createOutboxRelay({
      tableName: table,
      client: relayClient,
      publisher: createOutboxPublisher({ sqs }),
    });
    for (const v of ["A1", "A2"]) await write(v, "A", v);
    await relay.handler(batchOf(await capture()));
    expect(relay.lastReport).toMatchObject({ published: 2, orderReads: 1 });

    // The next batch: A3 follows A2, which this container published. No read at all.
    await write("A3", "A", "A3");
    const reads = () =>
      (requests.byCommand.BatchGetItemCommand ?? 0) + (requests.byCommand.QueryCommand ?? 0);
    const before = reads();
    await relay.handler(batchOf(await capture()));
    expect(relay.lastReport).toMatchObject({ published: 1, orderReads: 0, deferred: 0 });
    expect(reads() - before).toBe(0);

    // A gap: A4's record never reaches the relay (a mapping that gave up); A5 reads A4 and waits.
    await write("A4", "A", "A4");
    await capture(); // dropped
    await write("A5", "A", "A5");
    await relay.handler(batchOf(await capture()));
    expect(relay.lastReport).toMatchObject({ published: 0, orderReads: 1, deferred: 1 });

    // A cold container (a restart): its first event of A reads its predecessor by key.
    await write("B1", "B", "B1");
    await write("B2", "B", "B2");
    const [b1, b2] = await capture();
    const cold = createOutboxRelay({
      tableName: table,
      client: relayClient,
      publisher: createOutboxPublisher({ sqs }),
    });
    await cold.handler(batchOf([b1!]));
    expect(cold.lastReport).toMatchObject({ published: 1, orderReads: 1 });
    const getsBefore = requests.byCommand.BatchGetItemCommand ?? 0;
    const restarted = createOutboxRelay({
      tableName: table,
      client: relayClient,
      publisher: createOutboxPublisher({ sqs }),
    });
    await restarted.handler(batchOf([b2!]));
    expect(restarted.lastReport).toMatchObject({ published: 1, orderReads: 1 });
    expect((requests.byCommand.BatchGetItemCommand ?? 0) - getsBefore).toBe(1);
    const got = await bodies(fifo);
    expect(got.filter((v) => v?.startsWith("A"))).toEqual(["A1", "A2", "A3"]);
    expect(got.filter((v) => v?.startsWith("B"))).toEqual(["B1", "B2"]);
    relayClient.destroy();
  });

  it("a first numbered event reads older unnumbered ones unless the table never had any (unnumberedEvents)", async () => {
    const { table, streamArn } = await appTable("upgrade");
    const capture = recorder(streamArn);
    const fifo = await fifoQueue("upgrade");
    // Before the upgrade: an unnumbered writer's event, never published (the mapping gave up on it).
    const old = createInboxOutbox({
      tableName: table,
      scope: "seq",
      client: ddb,
      defaultDestination: `sqs:${fifo}`,
      aggregateSequence: false,
    });
    await old.run(envelopeOf("U1", {}), (tx) => {
      tx.publish({ aggregateType: "acct", aggregateId: "A", eventType: "E", payload: "U1" });
    });
    await capture();
    const write = writer(table, `sqs:${fifo}`);
    await write("A1", "A", "A1"); // seq 1 of A
    await write("B1", "B", "B1"); // seq 1 of B
    const batch = batchOf(await capture());
    const relay = createOutboxRelay({
      tableName: table,
      client: ddb,
      publisher: createOutboxPublisher({ sqs }),
    });
    await relay.handler(batch);
    // The default reads before each first event: A1 waits behind U1; B1 goes.
    expect(relay.lastReport).toMatchObject({ published: 1, deferred: 1, orderReads: 2 });
    expect(await bodies(fifo)).toEqual(["B1"]);
    // A table that never had unnumbered writers: a first event has nothing before it, no read.
    const { table: fresh, streamArn: freshArn } = await appTable("fresh");
    const freshCapture = recorder(freshArn);
    const freshWrite = writer(fresh, `sqs:${fifo}`);
    await freshWrite("C1", "C", "C1");
    await freshWrite("C2", "C", "C2");
    const trusting = createOutboxRelay({
      tableName: fresh,
      client: ddb,
      publisher: createOutboxPublisher({ sqs }),
      unnumberedEvents: false,
    });
    await trusting.handler(batchOf(await freshCapture()));
    expect(trusting.lastReport).toMatchObject({ published: 2, deferred: 0, orderReads: 0 });
    expect(await bodies(fifo)).toEqual(["C1", "C2"]);
  });

  it("concurrent invocations in one container share the cache and never let an event overtake its predecessor", async () => {
    const { table, streamArn } = await appTable("concurrent");
    const capture = recorder(streamArn);
    const fifo = await fifoQueue("concurrent");
    const write = writer(table, `sqs:${fifo}`);
    for (let i = 1; i <= 6; i++) await write(`A${i}`, "A", `A${i}`);
    const records = await capture();
    // Two shards' worth of one aggregate's records (a split item collection), handled at once.
    const relay = createOutboxRelay({
      tableName: table,
      client: ddb,
      publisher: createOutboxPublisher({ sqs }),
    });
    const answers = await Promise.all([
      relay.handler(batchOf(records.slice(0, 3))),
      relay.handler(batchOf(records.slice(3))),
    ]);
    expect(answers).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    const got = await bodies(fifo);
    // Whatever went out went out in order; what did not is left pending for the sweeper.
    expect(got).toEqual(["A1", "A2", "A3", "A4", "A5", "A6"].slice(0, got.length));
    expect(got.length).toBeGreaterThanOrEqual(3);
    const pending = byPrefix(await scanAll(ddb, table), "OUTBOX#acct#A").filter((i) => i.pending);
    expect(pending).toHaveLength(6 - got.length);
  });

  it("the sweeper applies the same rule: a gap among an aggregate's due events (one requeued, not due yet) holds the rest", async () => {
    const { table, streamArn } = await appTable("sweepgap");
    const capture = recorder(streamArn);
    const fifo = await fifoQueue("sweepgap");
    const clock = { ms: Date.now() };
    const now = () => clock.ms;
    const write = writer(table, `sqs:${fifo}`, now);
    for (const v of ["A1", "A2", "A3"]) await write(v, "A", v);
    await capture(); // the mapping gave up on all three: still pending
    const items = byPrefix(await scanAll(ddb, table), "OUTBOX#acct#A");
    const a2 = items.find((i) => i[OUTBOX_ATTR.seq]?.N === "2")!;
    clock.ms += 120_000;
    // A2 is requeued (a new pendingSince: not due yet); A1 and A3 are due, with a gap between them.
    await requeueParked(
      ddb,
      table,
      { pk: a2.pk!.S!, sk: a2.sk!.S! },
      { shard: a2.pending!.S!, now: clock.ms },
    );
    const sweeper = createOutboxSweeper({
      tableName: table,
      client: ddb,
      minAgeMs: 60_000,
      now,
      publisherOptions: { sqs },
    });
    expect(await sweeper.sweep()).toMatchObject({ republished: 1, held: 1 });
    expect(await bodies(fifo)).toEqual(["A1"]);
    clock.ms += 120_000;
    expect(await sweeper.sweep()).toMatchObject({ republished: 2, held: 0, pendingCount: 0 });
    expect(await bodies(fifo)).toEqual(["A2", "A3"]);
  });
});
