import { setTimeout as sleep } from "node:timers/promises";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import type { SQSEvent } from "aws-lambda";
import { createDedupStore, METRIC, PermanentError, TransientError } from "reliable-consumers";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { dedupPk } from "../../lib/dedup/schema.ts";
import { CONTEXT_ATTRIBUTE } from "../../lib/sqs/attributePacking.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { toSqsRecord } from "../../local/src/services/sqs/trigger.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, drainQueue, sendAll, type TestQueue } from "../support/queues.ts";
import { SQS_NAME } from "../support/sqsSubstrate.ts";
import { recordingTelemetry } from "../support/telemetry.ts";

const name = names(import.meta.url);
const table = name("dedup");
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const queues: TestQueue[] = [];

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await deleteTable(ddb, table);
  await Promise.all(queues.map((q) => deleteQueues(sqs, q)));
});

async function queue(what: string, options?: Parameters<typeof createQueueWithDlq>[2]) {
  const q = await createQueueWithDlq(sqs, name(what), options);
  queues.push(q);
  return q;
}

const Msg = z.object({ id: z.string(), n: z.number().optional() });
type Msg = z.infer<typeof Msg>;

describe(`sqsConsumer against ${SQS_NAME} and DynamoDB Local`, () => {
  it("applies each key once: same key sent twice, and the same SQS message redelivered", async () => {
    const q = await queue("dups");
    const effects = new Map<string, number>();
    const telemetry = recordingTelemetry();
    const handler = sqsConsumer<Msg>(
      async ({ body }) => {
        effects.set(body.id, (effects.get(body.id) ?? 0) + 1);
      },
      { schema: Msg, key: (m) => m.id, idempotency: { tableName: table }, telemetry },
    );
    await sendAll(
      sqs,
      q.url,
      ["a", "b", "a", "c", "b"].map((id) => ({ body: JSON.stringify({ id }) })),
    );
    const first = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "dups-fn",
    });
    expect(first.received).toBe(5);
    expect(first.failed).toEqual([]);

    // A lost ack: SQS hands the very same message over again in a later batch.
    await sendAll(sqs, q.url, [{ body: JSON.stringify({ id: "a" }) }]);
    const redelivered = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "dups-fn",
    });
    expect(redelivered.failed).toEqual([]);

    expect(Object.fromEntries(effects)).toEqual({ a: 1, b: 1, c: 1 });
    expect(telemetry.counts[METRIC.inBatchDuplicates]).toBe(2);
    expect(telemetry.counts[METRIC.duplicates]).toBe(1);
    expect(telemetry.counts[METRIC.processed]).toBe(3);
  });

  it("runs a key once across two concurrent invocations; the loser fails, then succeeds as a duplicate", async () => {
    const q = await queue("concurrent");
    let effects = 0;
    const started = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const handler = sqsConsumer<Msg>(
      async () => {
        effects++;
        started.resolve();
        await release.promise;
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope: "concurrent", leaseMs: 2_000 },
      },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"k"}' }, { body: '{"id":"k"}' }]);
    // Two invocations each get one copy.
    const one = invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      batchSize: 1,
    });
    await started.promise;
    const two = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      batchSize: 1,
    });
    expect(two.failed).toHaveLength(1);
    release.resolve();
    expect((await one).failed).toEqual([]);

    // The loser comes back once the winner's lease is over or completed (here: completed).
    let later = { received: 0, failed: [] as string[] };
    for (let i = 0; i < 40 && later.received === 0; i++) {
      later = await invokeFromQueue(sqs, handler, { queueUrl: q.url, queueArn: q.arn, functionName: "f" });
    }
    expect(later.received).toBe(1);
    expect(later.failed).toEqual([]);
    expect(effects).toBe(1);
  });

  it("fences out a holder whose lease expired: the new holder completes, the old completion is rejected", async () => {
    const q = await queue("fence", { visibilityTimeout: 1 });
    const telemetry = recordingTelemetry();
    let calls = 0;
    const gate = Promise.withResolvers<void>();
    const handler = sqsConsumer<Msg>(
      async () => {
        calls++;
        if (calls === 1) await gate.promise; // the first holder stalls past its lease
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope: "fence", leaseMs: 500 },
        heartbeat: false,
        telemetry,
      },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"x"}' }]);
    const stalled = invokeFromQueue(sqs, handler, { queueUrl: q.url, queueArn: q.arn, functionName: "f" });
    await sleep(1200); // lease (0.5 s) and visibility (1 s) both ran out
    const second = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      waitSeconds: 2,
    });
    expect(second.received).toBe(1);
    expect(second.failed).toEqual([]);
    gate.resolve();
    await stalled;
    expect(telemetry.counts[METRIC.leasesLost]).toBe(1);
    const item = await ddb.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: dedupPk("fence", "x") } } }),
    );
    expect(item.Item?.status?.S).toBe("COMPLETED");
    expect(item.Item?.attempts?.N).toBe("2");
  });

  it("parks a poison record in the DLQ with its context after one attempt; the rest of the batch succeeds", async () => {
    const q = await queue("poison", { maxReceiveCount: 5 });
    const seen: string[] = [];
    const handler = sqsConsumer<Msg>(
      async ({ body }) => {
        if (body.id === "rule") throw new PermanentError("amount over the customer's limit");
        seen.push(body.id);
      },
      { schema: Msg, key: (m) => m.id, idempotency: { tableName: table, scope: "poison" } },
    );
    await sendAll(sqs, q.url, [
      { body: '{"id":"ok1"}' },
      {
        body: "{not json",
        attributes: { tenant: { DataType: "String", StringValue: "acme" } },
      },
      { body: '{"id":42}' },
      { body: '{"id":"rule"}' },
      { body: '{"id":"ok2"}' },
    ]);
    const result = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "poison-fn",
    });
    expect(result.received).toBe(5);
    expect(result.failed).toEqual([]);
    expect(seen.sort()).toEqual(["ok1", "ok2"]);

    const parked = await drainQueue(sqs, q.dlqUrl);
    expect(parked).toHaveLength(3);
    const byType = Object.fromEntries(
      parked.map((m) => {
        const ctx = JSON.parse(m.MessageAttributes![CONTEXT_ATTRIBUTE]!.StringValue!) as Record<
          string,
          string
        >;
        return [ctx["x-last-error"]!.split(":")[0]!, { m, ctx }];
      }),
    );
    expect(Object.keys(byType).sort()).toEqual([
      "InvalidJsonError",
      "PermanentError",
      "SchemaValidationError",
    ]);
    const bad = byType.InvalidJsonError!;
    expect(bad.m.Body).toBe("{not json");
    expect(bad.m.MessageAttributes?.tenant?.StringValue).toBe("acme"); // the user's attribute survives
    expect(bad.ctx["x-original-queue"]).toBe(q.arn);
    expect(bad.ctx["x-retry-count"]).toBe("0");
    expect(bad.ctx["x-consumer"]).toBe("poison-fn");
    expect(bad.ctx["x-first-failed-at"]).toMatch(/^\d{4}-\d\d-\d\dT/);
    // Nothing is left in the source queue.
    expect(await drainQueue(sqs, q.url, 0)).toHaveLength(0);
  });

  it("reports a record failed, and keeps it, when parking in the DLQ fails", async () => {
    const q = await queue("park-fails");
    const handler = sqsConsumer<Msg>(async () => undefined, {
      schema: Msg,
      idempotency: false,
      deadLetterQueueUrl: `${q.url}-does-not-exist`,
    });
    await sendAll(sqs, q.url, [{ body: "garbage" }, { body: '{"id":"fine"}' }]);
    const result = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
    });
    expect(result.received).toBe(2);
    expect(result.failed).toHaveLength(1);
    expect(result.deleted).toBe(1);
  });

  it("parks in an explicit DLQ even when the source queue cannot be looked up", async () => {
    const q = await queue("explicit-dlq");
    const handler = sqsConsumer<Msg>(async () => undefined, {
      schema: Msg,
      idempotency: false,
      deadLetterQueueUrl: q.dlqUrl,
    });
    const missing = "arn:aws:sqs:us-east-1:000000000000:no-such-queue";
    const event: SQSEvent = {
      Records: [toSqsRecord({ MessageId: "m-1", ReceiptHandle: "rh-1", Body: "garbage" }, missing)],
    };
    const response = await handler(event, lambdaContext("f", 30_000));
    expect(response.batchItemFailures).toEqual([]);
    const parked = await drainQueue(sqs, q.dlqUrl);
    expect(parked.map((m) => m.Body)).toEqual(["garbage"]);
  });

  it("makes a transiently failing record visible again after the backoff, not the queue's 60 s timeout", async () => {
    const q = await queue("backoff", { visibilityTimeout: 60 });
    let calls = 0;
    const handler = sqsConsumer<Msg>(
      async () => {
        calls++;
        if (calls === 1) throw new TransientError("dependency unavailable");
      },
      {
        schema: Msg,
        idempotency: { tableName: table, scope: "backoff" },
        backoff: { baseSeconds: 1, maxSeconds: 1 },
      },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"t"}' }]);
    const first = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
    });
    expect(first.failed).toHaveLength(1);
    // Within a few seconds (backoff ≤ 1 s), far sooner than the 60 s visibility timeout.
    const again = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      waitSeconds: 5,
    });
    expect(again.received).toBe(1);
    expect(again.failed).toEqual([]);
    expect(calls).toBe(2); // the failed attempt released its lease, so the retry ran at once
  });

  it("FIFO: a failure in group A fails A's later records only; B runs on, each group in order", async () => {
    const q = await queue("fifo", { fifo: true });
    const order: string[] = [];
    const handler = sqsConsumer<Msg>(
      async ({ body }) => {
        if (body.id === "A2") throw new TransientError("A2 fails");
        order.push(body.id);
      },
      { schema: Msg, key: (m) => m.id, idempotency: { tableName: table, scope: "fifo" }, concurrency: 4 },
    );
    // fauxqs hands out one message per group per receive (SQS and LocalStack several: see
    // sqsSemantics.test.ts), so the batch is assembled as Lambda would.
    const ids = ["A1", "B1", "A2", "B2", "A3", "B3"];
    const event: SQSEvent = {
      Records: ids.map((id, i) =>
        toSqsRecord(
          {
            MessageId: `m-${id}`,
            ReceiptHandle: `rh-${i}`,
            Body: JSON.stringify({ id }),
            Attributes: { MessageGroupId: id[0]!, ApproximateReceiveCount: "1", SequenceNumber: String(i) },
          },
          q.arn,
        ),
      ),
    };
    const response = await handler(event, lambdaContext("fifo-fn", 30_000));
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(["m-A2", "m-A3"]);
    expect(order.filter((id) => id.startsWith("A"))).toEqual(["A1"]);
    expect(order.filter((id) => id.startsWith("B"))).toEqual(["B1", "B2", "B3"]);
  });

  it("FIFO: bad input that cannot be parked holds back its group's later records", async () => {
    const q = await queue("fifo-unparked", { fifo: true });
    const order: string[] = [];
    const handler = sqsConsumer<Msg>(
      async ({ body }) => {
        order.push(body.id);
      },
      { schema: Msg, idempotency: false, deadLetterQueueUrl: `${q.url}-does-not-exist` },
    );
    const bodies = [
      ["A", '{"id":"A1"}'],
      ["A", "not json"],
      ["A", '{"id":"A3"}'],
      ["B", '{"id":"B1"}'],
    ] as const;
    const event: SQSEvent = {
      Records: bodies.map(([group, body], i) =>
        toSqsRecord(
          {
            MessageId: `m-${i}`,
            ReceiptHandle: `rh-${i}`,
            Body: body,
            Attributes: { MessageGroupId: group, ApproximateReceiveCount: "1", SequenceNumber: String(i) },
          },
          q.arn,
        ),
      ),
    };
    const response = await handler(event, lambdaContext("fifo-fn", 30_000));
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(["m-1", "m-2"]);
    expect(order.sort()).toEqual(["A1", "B1"]);
  });

  it("stops starting records when the Lambda time runs low and returns the rest at once", async () => {
    const q = await queue("deadline");
    let ran = 0;
    const handler = sqsConsumer<Msg>(
      async () => {
        ran++;
        await sleep(300);
      },
      // The settlement reserve at its floor (the answer margin, 0.5 s), below the 1 s margin.
      { schema: Msg, idempotency: false, concurrency: 1, timeMarginMs: 1_000, settleReserveMs: 500 },
    );
    await sendAll(
      sqs,
      q.url,
      ["1", "2", "3", "4", "5", "6", "7", "8"].map((id) => ({ body: JSON.stringify({ id }) })),
    );
    // 1.7 s budget, 1 s margin, 0.3 s per record: a few run, the rest are handed back.
    const result = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      timeoutMs: 1_700,
    });
    expect(result.received).toBe(8);
    expect(ran).toBeGreaterThan(0);
    expect(ran).toBeLessThan(8);
    expect(result.failed).toHaveLength(8 - ran);
    // Visibility was set to 0: they are back immediately.
    expect(await drainQueue(sqs, q.url)).toHaveLength(8 - ran);
  });

  it("a record waiting on its claim holds no slot: records whose claims came back run first", async () => {
    const q = await queue("ready-first");
    const order: string[] = [];
    // DynamoDB holds back the claims of the batch's first five records (one request of five)
    // until five effects have run; 10 s is only there so that a regression fails instead of hanging.
    const held = new DynamoDBClient({});
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const fallback = setTimeout(() => release(), 10_000);
    held.middlewareStack.add(
      (next) => async (args) => {
        const statements = (args.input as { Statements?: Array<{ Parameters?: Array<{ S?: string }> }> })
          .Statements;
        if (statements?.some((st) => st.Parameters?.some((p) => p.S?.endsWith("#a0")))) await released;
        return next(args);
      },
      { step: "initialize", name: "holdFirstClaims" },
    );
    const handler = sqsConsumer<Msg>(
      async ({ body }) => {
        order.push(body.id);
        if (order.length === 5) release();
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: createDedupStore({
          tableName: table,
          scope: name("ready-first"),
          client: held,
          claims: { maxBatch: 5 },
        }),
        dynamodbClient: held,
        concurrency: 1,
      },
    );
    const ids = ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"];
    await sendAll(
      sqs,
      q.url,
      ids.map((id) => ({ body: JSON.stringify({ id }) })),
    );
    // The batch in id order (a standard queue hands messages over in any order).
    const Records = (await drainQueue(sqs, q.url))
      .map((m) => toSqsRecord(m, q.arn))
      .sort((a, b) => JSON.parse(a.body).id.localeCompare(JSON.parse(b.body).id));
    expect(Records.map((r) => JSON.parse(r.body).id)).toEqual(ids);
    const out = await handler({ Records }, lambdaContext("ready-first", 60_000));
    clearTimeout(fallback);
    expect(out.batchItemFailures).toEqual([]);
    // With one slot, the five records whose claims were answered ran while a0–a4 waited.
    expect(order).toEqual(["b0", "b1", "b2", "b3", "b4", "a0", "a1", "a2", "a3", "a4"]);
  });

  it("keeps a short lease alive through a long job although the visibility timeout is far longer", async () => {
    // 6 × the function timeout makes visibility long; a duplicate delivery must still not take a
    // key whose 2 s lease would have lapsed mid-job without its own renewal cadence.
    const q = await queue("lease-cadence", { visibilityTimeout: 180 });
    const telemetry = recordingTelemetry();
    let effects = 0;
    const handler = sqsConsumer<Msg>(
      async () => {
        effects++;
        await sleep(5_000);
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope: "cadence", leaseMs: 2_000 },
        telemetry,
      },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"long"}' }, { body: '{"id":"long"}' }]);
    const trigger = { queueUrl: q.url, queueArn: q.arn, functionName: "f", batchSize: 1 };
    const first = invokeFromQueue(sqs, handler, trigger);
    await sleep(3_000); // past the first claim's 2 s
    const second = await invokeFromQueue(sqs, handler, trigger);
    expect(second.received).toBe(1);
    expect(second.failed).toHaveLength(1); // in progress elsewhere: not run
    expect((await first).failed).toEqual([]);
    expect(effects).toBe(1);
    expect(telemetry.counts[METRIC.leasesLost] ?? 0).toBe(0);
  });

  it("acks a record whose effect ran even when its result cannot be stored (a BigInt)", async () => {
    const q = await queue("unstorable");
    let effects = 0;
    const handler = sqsConsumer<Msg>(
      async () => {
        effects++;
        return { big: 1n };
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope: "unstorable", storeResult: true },
      },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"r"}' }]);
    const out = await invokeFromQueue(sqs, handler, { queueUrl: q.url, queueArn: q.arn, functionName: "f" });
    expect(out.failed).toEqual([]);
    expect(effects).toBe(1);
    const item = await ddb.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: dedupPk("unstorable", "r") } } }),
    );
    expect(item.Item?.status?.S).toBe("COMPLETED");
  });

  it("same key, other payload in one batch: not dropped; redelivered, then parked as key reuse", async () => {
    const q = await queue("reuse", { maxReceiveCount: 5 });
    const handled: number[] = [];
    const handler = sqsConsumer<Msg>(
      async ({ body }) => {
        handled.push(body.n ?? 0);
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope: "reuse", payloadHash: true },
        backoff: { baseSeconds: 0, maxSeconds: 0 },
      },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"k","n":10}' }, { body: '{"id":"k","n":999}' }]);
    const first = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
    });
    expect(first.received).toBe(2);
    expect(first.failed).toHaveLength(1); // the second waits for the first instead of being acked unseen
    let parked: Awaited<ReturnType<typeof drainQueue>> = [];
    for (let i = 0; i < 20 && parked.length === 0; i++) {
      await invokeFromQueue(sqs, handler, { queueUrl: q.url, queueArn: q.arn, functionName: "f" });
      parked = await drainQueue(sqs, q.dlqUrl);
    }
    expect(handled).toEqual([10]);
    expect(parked).toHaveLength(1);
    expect(parked[0]!.Body).toBe('{"id":"k","n":999}');
    expect(JSON.stringify(parked[0]!.MessageAttributes)).toContain("KeyReuseError");
  });

  it("rejects an event that is not an SQS batch with a typed error", async () => {
    const handler = sqsConsumer(async () => undefined, { idempotency: false });
    await expect(
      handler({ records: {} } as unknown as SQSEvent, lambdaContext("f", 1000)),
    ).rejects.toMatchObject({
      name: "UnknownEventShapeError",
    });
  });
});

describe(`SQS fair queues (standard queues whose producers set MessageGroupId) on ${SQS_NAME} (issue 26 item 8)`, () => {
  /** What the consumer sends through `client`, by command name: the inputs. */
  function sent(client: ReturnType<typeof createSqsClient>) {
    const inputs: { command: string; input: Record<string, unknown> }[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        inputs.push({ command: context.commandName ?? "", input: args.input as Record<string, unknown> });
        return next(args);
      },
      { step: "initialize", name: "recordRequests" },
    );
    return (command: string) => inputs.filter((i) => i.command === command).map((i) => i.input);
  }

  /**
   * A fair queue's batch, received from a real standard queue, in the shape the SQS trigger gives
   * (Lambda developer guide, "Using Lambda with Amazon SQS"; SQS developer guide, "Amazon SQS fair
   * queues", July 2025): the producer's MessageGroupId among the attributes, none of FIFO's
   * SequenceNumber or MessageDeduplicationId, and a queue ARN without `.fifo`. fauxqs 2.4.1 drops a
   * standard queue's group id on receive (sqsSemantics.test.ts), so it is taken from what was sent.
   */
  async function fairBatch(q: TestQueue, messages: { id: string; tenant: string }[]): Promise<SQSEvent> {
    await sendAll(
      sqs,
      q.url,
      messages.map((m) => ({ body: JSON.stringify({ id: m.id }), groupId: m.tenant })),
    );
    const received = await drainQueue(sqs, q.url);
    const tenantOf = new Map(messages.map((m) => [m.id, m.tenant]));
    const records = received.map((m) => {
      const { SequenceNumber: _s, MessageDeduplicationId: _d, ...attributes } = m.Attributes ?? {};
      const MessageGroupId = tenantOf.get(JSON.parse(m.Body!).id)!;
      return toSqsRecord({ ...m, Attributes: { ...attributes, MessageGroupId } }, q.arn);
    });
    records.sort((a, b) => JSON.parse(a.body).id.localeCompare(JSON.parse(b.body).id));
    expect(q.arn.endsWith(".fifo")).toBe(false);
    expect(records.map((r) => Object.keys(r.attributes).sort())).toEqual(
      records.map(() => [
        "ApproximateFirstReceiveTimestamp",
        "ApproximateReceiveCount",
        "MessageGroupId",
        "SenderId",
        "SentTimestamp",
      ]),
    );
    return { Records: records };
  }
  const idOf = (r: { body: string }) => JSON.parse(r.body).id as string;

  it("a group id is a tenant, not a FIFO lane: a failing record holds back nothing of its tenant and backs off through visibility", async () => {
    const q = await queue("fair");
    const client = createSqsClient();
    const requests = sent(client);
    const ran: string[] = [];
    const handler = sqsConsumer<Msg>(
      async ({ body, key }) => {
        if (body.id === "A1") throw new TransientError("A1 fails");
        ran.push(`${key}:${body.id}`);
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope: name("fair") },
        backoff: { baseSeconds: 600, maxSeconds: 600 },
        sqsClient: client,
      },
    );
    const event = await fairBatch(q, [
      { id: "A1", tenant: "tenant-a" },
      { id: "A2", tenant: "tenant-a" },
      { id: "A3", tenant: "tenant-a" },
      { id: "B1", tenant: "tenant-b" },
    ]);
    const response = await handler(event, lambdaContext("fair-fn", 30_000));
    // A FIFO group would hold A2 and A3 back behind A1 (and hide them with it); a tenant does not.
    expect(ran.sort()).toEqual(["tenant-a:A2", "tenant-a:A3", "tenant-b:B1"]);
    const a1 = event.Records.find((r) => idOf(r) === "A1")!;
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: a1.messageId }]);
    // The retry waits through the record's own visibility, set to its backoff.
    const changes = requests("ChangeMessageVisibilityBatchCommand").flatMap(
      (i) => i.Entries as { ReceiptHandle: string; VisibilityTimeout: number }[],
    );
    expect(changes.map((c) => c.ReceiptHandle)).toEqual([a1.receiptHandle]);
    expect(changes[0]!.VisibilityTimeout).toBeLessThanOrEqual(600);
    expect(requests("SendMessageCommand")).toEqual([]);
  });

  it("on the last receive, a healthy record is requeued (not parked) and a failed one parked, each keeping its tenant", async () => {
    const q = await queue("fair-last", { maxReceiveCount: 1 });
    const scope = name("fair-last");
    // Another invocation holds A2's key: A2 is healthy, it only waits.
    const other = createDedupStore({ tableName: table, scope, client: ddb, leaseMs: 60_000 });
    const held = await other.claim("A2");
    if (held.status !== "claimed") throw new Error(`expected to hold A2, got ${held.status}`);
    const client = createSqsClient();
    const requests = sent(client);
    const ran: string[] = [];
    const telemetry = recordingTelemetry();
    const handler = sqsConsumer<Msg>(
      async ({ body }) => {
        if (body.id === "A1") throw new TransientError("A1 fails");
        ran.push(body.id);
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope },
        telemetry,
        sqsClient: client,
      },
    );
    const event = await fairBatch(q, [
      { id: "A1", tenant: "tenant-a" },
      { id: "A2", tenant: "tenant-a" },
      { id: "A3", tenant: "tenant-a" },
    ]);
    const response = await handler(event, lambdaContext("fair-fn", 30_000));
    expect(response.batchItemFailures).toEqual([]);
    expect(ran).toEqual(["A3"]);
    // A2 goes back into the queue as a fresh copy, in its tenant, delayed until the holder is done.
    expect(telemetry.counts[METRIC.requeued]).toBe(1);
    const copies = requests("SendMessageBatchCommand").flatMap(
      (i) => i.Entries as { MessageBody: string; MessageGroupId?: string; DelaySeconds: number }[],
    );
    expect(copies.map((c) => [idOf({ body: c.MessageBody }), c.MessageGroupId])).toEqual([
      ["A2", "tenant-a"],
    ]);
    expect(copies[0]!.DelaySeconds).toBeGreaterThan(0);
    // A1 failed on its last receive: parked with its context, in its tenant (so a redrive keeps it).
    const parks = requests("SendMessageCommand");
    expect(parks.map((p) => [idOf({ body: p.MessageBody as string }), p.MessageGroupId, p.QueueUrl])).toEqual(
      [["A1", "tenant-a", q.dlqUrl]],
    );
    expect((await drainQueue(sqs, q.dlqUrl)).map((m) => idOf({ body: m.Body! }))).toEqual(["A1"]);
    await other.release(held.lease);
  });
});
