import { CreateQueueCommand, DeleteQueueCommand } from "@aws-sdk/client-sqs";
import type { KinesisStreamEvent } from "aws-lambda";
import { createDedupStore, METRIC, PermanentError, TransientError } from "reliable-consumers";
import { kinesisConsumer } from "reliable-consumers/kinesis";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { CONTEXT_ATTRIBUTE } from "../../lib/sqs/attributePacking.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { dynamodb } from "../support/clients.ts";
import { batchFrom, putRecords, testShard } from "../support/kinesisEvents.ts";
import { names } from "../support/names.ts";
import { drainQueue } from "../support/queues.ts";
import { SQS_NAME } from "../support/sqsSubstrate.ts";
import { recordingTelemetry } from "../support/telemetry.ts";

const name = names(import.meta.url);
const table = name("dedup");
const ddb = dynamodb();
const sqs = createSqsClient();
const queueUrls: string[] = [];

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await deleteTable(ddb, table);
  await Promise.allSettled(queueUrls.map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))));
});

async function parkingQueue(what: string): Promise<string> {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name(what) }))).QueueUrl!;
  queueUrls.push(url);
  return url;
}

const Click = z.object({ id: z.string(), n: z.number() });
type Click = z.infer<typeof Click>;

const invoke = (handler: ReturnType<typeof kinesisConsumer<Click>>, event: KinesisStreamEvent) =>
  handler(event, lambdaContext("kinesis-fn", 60_000));

/** Counts each id's effects; `failOnce` ids throw `error` on their first run. */
function effects(failOnce: ReadonlyArray<string> = [], error = () => new TransientError("downstream busy")) {
  const count = new Map<string, number>();
  const failed = new Set<string>();
  const order: string[] = [];
  return {
    count,
    order,
    total: () => [...count.values()].reduce((a, b) => a + b, 0),
    handler: async ({ body }: { body: Click }) => {
      if (failOnce.includes(body.id) && !failed.has(body.id)) {
        failed.add(body.id);
        throw error();
      }
      order.push(body.id);
      count.set(body.id, (count.get(body.id) ?? 0) + 1);
    },
  };
}

describe(`kinesisConsumer against DynamoDB Local and ${SQS_NAME}`, () => {
  it("runs each record once; the same batch delivered again runs nothing", async () => {
    const shard = testShard(name("once"));
    putRecords(
      shard,
      ["a", "b", "c"].map((id, n) => ({ data: { id, n }, partitionKey: id })),
    );
    const fx = effects();
    const telemetry = recordingTelemetry();
    const handler = kinesisConsumer<Click>(fx.handler, {
      schema: Click,
      idempotency: { tableName: table, scope: name("once") },
      parkingQueueUrl: await parkingQueue("once"),
      telemetry,
    });
    expect(await invoke(handler, batchFrom(shard))).toEqual({ batchItemFailures: [] });
    expect(await invoke(handler, batchFrom(shard))).toEqual({ batchItemFailures: [] });
    expect(Object.fromEntries(fx.count)).toEqual({ a: 1, b: 1, c: 1 });
    expect(telemetry.counts[METRIC.duplicates]).toBe(3);
    // No business key: the dedup key is the record's coordinates, counted as a fallback.
    expect(telemetry.counts[METRIC.brokerIdFallback]).toBe(6);
  });

  it("ordering 'shard': a failure stops the rest of the batch; Lambda's resend from it runs each record once", async () => {
    const shard = testShard(name("shard"));
    putRecords(
      shard,
      ["r1", "r2", "r3", "r4", "r5", "r6"].map((id, n) => ({ data: { id, n }, partitionKey: `k${n % 2}` })),
    );
    const fx = effects(["r3"]);
    const handler = kinesisConsumer<Click>(fx.handler, {
      schema: Click,
      key: (c) => c.id,
      idempotency: { tableName: table, scope: name("shard") },
      parkingQueueUrl: await parkingQueue("shard"),
    });
    const first = await invoke(handler, batchFrom(shard));
    const r3 = shard.records[2]!.kinesis.sequenceNumber;
    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: r3 }] });
    // Nothing after the failed record ran.
    expect(fx.order).toEqual(["r1", "r2"]);
    const resent = await invoke(handler, batchFrom(shard, r3));
    expect(resent).toEqual({ batchItemFailures: [] });
    expect(fx.order).toEqual(["r1", "r2", "r3", "r4", "r5", "r6"]);
    expect([...fx.count.values()].every((n) => n === 1)).toBe(true);
  });

  it("ordering 'key': other keys go on; the records after the checkpoint that ran meet their completed key on the resend", async () => {
    const shard = testShard(name("key"));
    // a1 b1 a2 b2 a3 b3: a2 fails once.
    const puts = [1, 2, 3].flatMap((n) =>
      ["a", "b"].map((k) => ({ data: { id: `${k}${n}`, n }, partitionKey: k })),
    );
    putRecords(shard, puts);
    const fx = effects(["a2"]);
    const telemetry = recordingTelemetry();
    const handler = kinesisConsumer<Click>(fx.handler, {
      schema: Click,
      key: (c) => c.id,
      ordering: "key",
      idempotency: { tableName: table, scope: name("key") },
      parkingQueueUrl: await parkingQueue("key"),
      telemetry,
    });
    const first = await invoke(handler, batchFrom(shard));
    const a2 = shard.records[2]!.kinesis.sequenceNumber;
    // The lowest unfinished record, and only it: never a record reported done while an earlier one failed.
    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: a2 }] });
    // Key b went on past a2; a3 waited behind it.
    expect(fx.order.sort()).toEqual(["a1", "b1", "b2", "b3"]);
    const resent = await invoke(handler, batchFrom(shard, a2));
    expect(resent).toEqual({ batchItemFailures: [] });
    expect(Object.fromEntries(fx.count)).toEqual({ a1: 1, a2: 1, a3: 1, b1: 1, b2: 1, b3: 1 });
    // b2 and b3 came again after the checkpoint: duplicates, not run.
    expect(telemetry.counts[METRIC.duplicates]).toBe(2);
  });

  it("parks bad input and permanent errors with payload and context; the rest of the shard goes on", async () => {
    const shard = testShard(name("poison"));
    const binary = Buffer.from([0xff, 0x00, 0xfe, 0x01]);
    putRecords(shard, [
      { data: { id: "ok1", n: 1 }, partitionKey: "p" },
      { data: "{not json", partitionKey: "p" },
      { data: { id: "bad", n: "not a number" }, partitionKey: "p" },
      { data: binary, partitionKey: "p" },
      { data: { id: "", n: 5 }, partitionKey: "p" },
      { data: { id: "rule", n: 6 }, partitionKey: "p" },
      { data: { id: "ok2", n: 7 }, partitionKey: "p" },
    ]);
    const parking = await parkingQueue("poison");
    const ran: string[] = [];
    const telemetry = recordingTelemetry();
    const handler = kinesisConsumer<Click>(
      ({ body }) => {
        if (body.id === "rule") throw new PermanentError("business rule broken");
        ran.push(body.id);
      },
      {
        schema: Click,
        key: (c) => c.id,
        consumer: "clicks",
        idempotency: { tableName: table, scope: name("poison") },
        parkingQueueUrl: parking,
        telemetry,
      },
    );
    expect(await invoke(handler, batchFrom(shard))).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual(["ok1", "ok2"]);
    expect(telemetry.counts[METRIC.permanentFailures]).toBe(5);
    const parked = await drainQueue(sqs, parking);
    expect(parked).toHaveLength(5);
    const bySequence = new Map(
      parked.map((m) => {
        const context = JSON.parse(m.MessageAttributes![CONTEXT_ATTRIBUTE]!.StringValue!) as Record<
          string,
          string
        >;
        return [context["x-original-offset"]!, { m, context }];
      }),
    );
    const at = (i: number) => bySequence.get(shard.records[i]!.kinesis.sequenceNumber)!;
    expect(at(1).m.Body).toBe("{not json");
    expect(at(1).context).toMatchObject({
      "x-original-topic": shard.streamArn,
      "x-original-partition": shard.shardId,
      "x-consumer": "clicks",
      "x-retry-count": "0",
    });
    expect(at(1).context["x-last-error"]).toMatch(/^InvalidJsonError: /);
    expect(at(2).context["x-last-error"]).toMatch(/^SchemaValidationError: /);
    // Bytes that are not text: base64, and an attribute that says so.
    expect(at(3).m.Body).toBe(binary.toString("base64"));
    expect(at(3).m.MessageAttributes!["x-payload-encoding"]?.StringValue).toBe("base64");
    expect(at(3).context["x-last-error"]).toMatch(/^MalformedRecordError: /);
    expect(at(1).m.MessageAttributes!["x-payload-encoding"]).toBeUndefined();
    expect(at(4).context["x-last-error"]).toMatch(/^MissingIdError: /);
    expect(JSON.parse(at(5).m.Body!)).toEqual({ id: "rule", n: 6 });
    expect(at(5).context["x-message-id"]).toBe("rule");
    expect(at(5).context["x-last-error"]).toBe("PermanentError: business rule broken");
  });

  it("a parked record resent after an earlier record's failure is recognised, not parked again", async () => {
    const shard = testShard(name("reparked"));
    putRecords(shard, [
      { data: { id: "a1", n: 1 }, partitionKey: "a" },
      { data: "{not json", partitionKey: "b" },
      { data: { id: "b2", n: 2 }, partitionKey: "b" },
    ]);
    const parking = await parkingQueue("reparked");
    const fx = effects(["a1"]);
    const telemetry = recordingTelemetry();
    const handler = kinesisConsumer<Click>(fx.handler, {
      schema: Click,
      key: (c) => c.id,
      ordering: "key",
      idempotency: { tableName: table, scope: name("reparked") },
      parkingQueueUrl: parking,
      telemetry,
    });
    const a1 = shard.records[0]!.kinesis.sequenceNumber;
    expect(await invoke(handler, batchFrom(shard))).toEqual({ batchItemFailures: [{ itemIdentifier: a1 }] });
    // Lambda resends from a1: the parked record and b2 come again.
    expect(await invoke(handler, batchFrom(shard, a1))).toEqual({ batchItemFailures: [] });
    expect(await drainQueue(sqs, parking)).toHaveLength(1);
    expect(telemetry.counts[METRIC.routedRecognised]).toBe(1);
    expect(Object.fromEntries(fx.count)).toEqual({ a1: 1, b2: 1 });
  });

  it("a record whose earlier invocation crashed holding its lease is handed back once the lease ends: Lambda's next resend runs it", async () => {
    const shard = testShard(name("crashed"));
    putRecords(shard, [
      { data: { id: "x1", n: 1 }, partitionKey: "x" },
      { data: { id: "y1", n: 2 }, partitionKey: "y" },
    ]);
    const x1 = shard.records[0]!.kinesis.sequenceNumber;
    // What an invocation that died running x1 (a crash, a timeout) leaves: its claim under x1's
    // delivery, the lease still running, never renewed again.
    const dead = createDedupStore({ tableName: table, scope: name("crashed"), client: ddb, leaseMs: 20_000 });
    const held = await dead.claim("x1", { delivery: `${shard.streamArn}/${shard.shardId}/${x1}` });
    expect(held.status).toBe("claimed");
    const fx = effects();
    const handler = kinesisConsumer<Click>(fx.handler, {
      schema: Click,
      key: (c) => c.id,
      idempotency: { tableName: table, scope: name("crashed") },
      parkingQueueUrl: await parkingQueue("crashed"),
    });
    // Lambda resends the batch at once after the crash, and again at once after a partial answer:
    // within two invocations, never two lease lengths apart, x1 runs (once).
    let answer = await invoke(handler, batchFrom(shard));
    const failed = answer.batchItemFailures[0]?.itemIdentifier;
    if (failed !== undefined) answer = await invoke(handler, batchFrom(shard, failed));
    expect(answer).toEqual({ batchItemFailures: [] });
    expect(Object.fromEntries(fx.count)).toEqual({ x1: 1, y1: 1 });
  });

  it("without a parking queue: a permanent failure is handed back (never dropped), with a warning at init", async () => {
    const shard = testShard(name("noqueue"));
    putRecords(shard, [
      { data: { id: "x1", n: 1 }, partitionKey: "p" },
      { data: "{not json", partitionKey: "p" },
      { data: { id: "x3", n: 3 }, partitionKey: "p" },
    ]);
    const telemetry = recordingTelemetry();
    const warn = vi.spyOn(telemetry.logger, "warn");
    const fx = effects();
    vi.stubEnv("DLQ_URL", "");
    try {
      const handler = kinesisConsumer<Click>(fx.handler, {
        schema: Click,
        idempotency: { tableName: table, scope: name("noqueue") },
        telemetry,
      });
      expect(warn.mock.calls.filter(([m]) => String(m).startsWith("no parking queue"))).toHaveLength(1);
      const first = await invoke(handler, batchFrom(shard));
      expect(first).toEqual({
        batchItemFailures: [{ itemIdentifier: shard.records[1]!.kinesis.sequenceNumber }],
      });
      expect(fx.order).toEqual(["x1"]);
      await invoke(handler, batchFrom(shard, shard.records[1]!.kinesis.sequenceNumber));
      expect(warn.mock.calls.filter(([m]) => String(m).startsWith("no parking queue"))).toHaveLength(1);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("reads text, bytes (base64 decoded once) and the envelope's stream fields", async () => {
    const shard = testShard(name("formats"), "shardId-000000000007");
    putRecords(shard, [{ data: "héllo", partitionKey: "pk-1" }]);
    const seen: unknown[] = [];
    const text = kinesisConsumer<string>((e) => void seen.push(e), {
      parse: "text",
      idempotency: false,
      parkingQueueUrl: await parkingQueue("formats"),
    });
    const bytes = kinesisConsumer<Buffer>(({ body }) => void seen.push(body), {
      parse: "bytes",
      idempotency: false,
      parkingQueueUrl: await parkingQueue("formats2"),
    });
    const ctx = lambdaContext("kinesis-fn", 60_000);
    await text(batchFrom(shard), ctx);
    await bytes(batchFrom(shard), ctx);
    const r = shard.records[0]!;
    expect(seen[0]).toMatchObject({
      body: "héllo",
      key: "pk-1",
      partitionKey: "pk-1",
      shardId: "shardId-000000000007",
      sequenceNumber: r.kinesis.sequenceNumber,
      streamArn: shard.streamArn,
      approximateArrivalTimestamp: r.kinesis.approximateArrivalTimestamp,
      id: `${shard.streamArn}/shardId-000000000007/${r.kinesis.sequenceNumber}`,
      idSource: "broker",
      source: {
        kind: "kinesis",
        streamArn: shard.streamArn,
        shardId: "shardId-000000000007",
        sequenceNumber: r.kinesis.sequenceNumber,
        partitionKey: "pk-1",
      },
    });
    expect(seen[1]).toEqual(Buffer.from("héllo", "utf8"));
  });

  it("rejects an event of another shape before touching any record", async () => {
    const handler = kinesisConsumer(() => undefined, { idempotency: false, parkingQueueUrl: "unused" });
    const ctx = lambdaContext("kinesis-fn", 60_000);
    await expect(handler({ Records: [{ eventSource: "aws:sqs", body: "{}" }] }, ctx)).rejects.toThrow(
      /not a Kinesis record/,
    );
    await expect(handler({}, ctx)).rejects.toMatchObject({ name: "UnknownEventShapeError" });
  });

  it("concurrent batches in one process: two shards sharing keys run each key once", async () => {
    const shards = [
      testShard(name("conc"), "shardId-000000000001"),
      testShard(name("conc"), "shardId-000000000002"),
    ];
    // Both shards carry the same ten business keys (a producer that wrote each event twice).
    for (const shard of shards)
      putRecords(
        shard,
        Array.from({ length: 10 }, (_, n) => ({ data: { id: `k${n}`, n }, partitionKey: `p${n}` })),
      );
    const fx = effects();
    const handler = kinesisConsumer<Click>(
      async (e) => {
        await new Promise((resolve) => setImmediate(resolve));
        await fx.handler(e);
      },
      {
        schema: Click,
        key: (c) => c.id,
        ordering: "key",
        idempotency: { tableName: table, scope: name("conc"), leaseMs: 5_000 },
        parkingQueueUrl: await parkingQueue("conc"),
      },
    );
    let pending = shards.map((s) => batchFrom(s));
    for (let round = 0; round < 20 && pending.length > 0; round++) {
      const answers = await Promise.all(pending.map((event) => invoke(handler, event)));
      pending = answers.flatMap((a, i) => {
        const from = a.batchItemFailures[0]?.itemIdentifier;
        return from === undefined ? [] : [batchFrom(shards[i]!, from)];
      });
    }
    expect(pending).toEqual([]);
    expect(fx.count.size).toBe(10);
    expect([...fx.count.values()].every((n) => n === 1)).toBe(true);
  });
});
