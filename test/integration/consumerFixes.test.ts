/**
 * Issue 14, items 5, 7, 8, 13 and 14: what the SQS and Kafka consumers write and count, against
 * fauxqs (and LocalStack's SQS, the second pass) and DynamoDB Local. Each test failed before its fix.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import {
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { createDedupStore, METRIC, TransientError } from "reliable-consumers";
import { getKafkaProducer } from "reliable-consumers/kafka";
import { createSqsClient, SQS_CONSUMER_DEFAULTS, sqsConsumer } from "reliable-consumers/sqs";
import { invokeFromQueue } from "reliable-consumers-local";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { RecordTimeoutError } from "../../lib/core/errors.ts";
import { createIdempotency } from "../../lib/dedup/idempotency.ts";
import { dedupPk } from "../../lib/dedup/schema.ts";
import { createKafkaBatchProcessor } from "../../lib/kafka/kafkaBatchProcessor.ts";
import { packAttributes } from "../../lib/sqs/attributePacking.ts";
import { toSdkAttributes } from "../../lib/sqs/deadLetter.ts";
import { toSqsEnvelope } from "../../lib/sqs/sqsEnvelope.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { toSqsRecord } from "../../local/src/services/sqs/trigger.ts";
import { lambdaContext, recordingTelemetry } from "../support/kafkaHarness.ts";
import { manualClock } from "../support/manualClock.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, drainQueue, sendAll, type TestQueue } from "../support/queues.ts";
import { describeWithoutSqs } from "../support/sqsSubstrate.ts";

const name = names(import.meta.url);
const table = name("dedup");
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const queues: TestQueue[] = [];
const b64 = (s: string) => Buffer.from(s).toString("base64");

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await deleteTable(ddb, table);
  await Promise.all(queues.map((q) => deleteQueues(sqs, q)));
});

const savedEnv = { ...process.env };
afterEach(() => {
  for (const k of ["DEDUP_TABLE_NAME", "DEDUP_WINDOW_SECONDS", "CONSUMER_NAME"]) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

async function queue(what: string, options?: Parameters<typeof createQueueWithDlq>[2]) {
  const q = await createQueueWithDlq(sqs, name(what), options);
  queues.push(q);
  return q;
}

const Msg = z.object({ id: z.string() });

function kafkaEvent(topic: string, records: Array<{ offset: number; value: unknown; id?: string }>) {
  return {
    eventSource: "aws:kafka",
    records: {
      [`${topic}-0`]: records.map((r) => ({
        topic,
        partition: 0,
        offset: r.offset,
        timestamp: Date.now(),
        timestampType: "CREATE_TIME",
        key: b64("k"),
        value: b64(JSON.stringify(r.value)),
        headers: r.id ? [{ "message-id": [...Buffer.from(r.id)] }] : [],
      })),
    },
  };
}

async function itemOf(scope: string, key: string) {
  return (await ddb.send(new GetItemCommand({ TableName: table, Key: { pk: { S: dedupPk(scope, key) } } })))
    .Item;
}

describeWithoutSqs("issue 14 item 5: the dedup window written is the one the stack sets", () => {
  it("createIdempotency reads DEDUP_WINDOW_SECONDS for the TTL it writes", async () => {
    process.env.DEDUP_TABLE_NAME = table;
    process.env.DEDUP_WINDOW_SECONDS = "3600";
    const store = createIdempotency(undefined, ddb).storeFor(name("window"));
    const before = Math.floor(Date.now() / 1000);
    const claim = await store!.claim("w1");
    expect(claim.status).toBe("claimed");
    const expiresAt = Number((await itemOf(name("window"), "w1"))?.expiresAt?.N);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3600);
    expect(expiresAt).toBeLessThan(before + 3600 + 60);
  });

  it("a DEDUP_WINDOW_SECONDS that is not a positive whole number fails at handler creation", () => {
    process.env.DEDUP_TABLE_NAME = table;
    process.env.DEDUP_WINDOW_SECONDS = "15d";
    expect(() => sqsConsumer(async () => undefined)).toThrow(/DEDUP_WINDOW_SECONDS/);
  });

  it("a missing DEDUP_TABLE_NAME fails when the handler is created, naming the variable", () => {
    delete process.env.DEDUP_TABLE_NAME;
    expect(() => sqsConsumer(async () => undefined)).toThrow(/DEDUP_TABLE_NAME/);
  });
});

describeWithoutSqs("issue 14 item 7: the dedup scope survives a function replacement", () => {
  it("scopes by CONSUMER_NAME, not by the (generated) function name", async () => {
    process.env.CONSUMER_NAME = name("payments");
    let runs = 0;
    const telemetry = recordingTelemetry();
    const process_ = createKafkaBatchProcessor(
      async () => {
        runs++;
      },
      {
        idempotency: { tableName: table },
        producer: getKafkaProducer(),
        dynamodbClient: ddb,
        telemetry,
      },
    );
    const event = kafkaEvent("orders", [{ offset: 1, value: { a: 1 }, id: "stable-1" }]);
    await process_(event, lambdaContext(60_000, "Stack-PaymentConsumerABC123-1"));
    // The function was replaced by a deploy: CloudFormation generated a new name.
    await process_(event, lambdaContext(60_000, "Stack-PaymentConsumerDEF456-2"));
    expect(runs).toBe(1);
    expect(telemetry.counts[METRIC.duplicates]).toBe(1);
    expect((await itemOf(name("payments"), "stable-1"))?.status?.S).toBe("COMPLETED");
  });
});

describe("issue 14 item 13: storeResult hands a duplicate's stored result to the caller", () => {
  it("onDuplicate receives the first run's result", async () => {
    const q = await queue("stored");
    const seen: unknown[] = [];
    const handler = sqsConsumer<{ id: string }>(async ({ body }) => ({ receipt: `r-${body.id}` }), {
      schema: Msg,
      key: (m) => m.id,
      idempotency: { tableName: table, scope: name("stored"), storeResult: true },
      onDuplicate: (envelope, { storedResult }) => {
        seen.push({ id: envelope.id, storedResult });
      },
    });
    const trigger = { queueUrl: q.url, queueArn: q.arn, functionName: "f" };
    await sendAll(sqs, q.url, [{ body: '{"id":"a"}' }]);
    await invokeFromQueue(sqs, handler, trigger);
    await sendAll(sqs, q.url, [{ body: '{"id":"a"}' }]);
    const second = await invokeFromQueue(sqs, handler, trigger);
    expect(second.failed).toEqual([]);
    expect(seen).toEqual([{ id: "a", storedResult: { receipt: "r-a" } }]);
  });
});

describe("issue 14 item 8: healthy SQS records do not use up their receives", () => {
  it("a record held elsewhere past maxReceiveCount is not dead-lettered; it runs once the holder is done", async () => {
    const q = await queue("held", { maxReceiveCount: 2 });
    const scope = name("held");
    // Another invocation holds the key throughout, renewing its 2 s lease as a long job would.
    const holder = createDedupStore({ tableName: table, scope, client: ddb, leaseMs: 2_000 });
    const held = await holder.claim("h1");
    if (held.status !== "claimed") throw new Error(`expected to hold h1, got ${held.status}`);
    let lease = held.lease;
    const renewing = setInterval(() => {
      void holder.renew(lease).then((l) => {
        lease = l;
      });
    }, 500);
    let runs = 0;
    const telemetry = recordingTelemetry();
    const handler = sqsConsumer<{ id: string }>(
      async () => {
        runs++;
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope },
        backoff: { baseSeconds: 0, maxSeconds: 0 },
        telemetry,
      },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"h1"}' }]);
    const trigger = { queueUrl: q.url, queueArn: q.arn, functionName: "f", waitSeconds: 5 };
    try {
      // Four deliveries while the key is held: twice the queue's maxReceiveCount.
      for (let i = 0; i < 4; i++) {
        const out = await invokeFromQueue(sqs, handler, trigger);
        expect(out.received).toBe(1);
        expect(out.failed.length + (telemetry.counts[METRIC.requeued] ?? 0)).toBeGreaterThan(0);
      }
    } finally {
      clearInterval(renewing);
    }
    expect(runs).toBe(0);
    expect(await drainQueue(sqs, q.dlqUrl)).toHaveLength(0);
    await holder.release(lease);
    let done = false;
    for (let i = 0; i < 10 && !done; i++) {
      const out = await invokeFromQueue(sqs, handler, trigger);
      done = out.received === 1 && out.failed.length === 0;
    }
    expect(runs).toBe(1);
    expect(await drainQueue(sqs, q.dlqUrl)).toHaveLength(0);
    expect(telemetry.counts[METRIC.requeued]).toBeGreaterThanOrEqual(1);
  });

  it("FIFO: the record held back behind a failing one is not parked with it; it runs once the failing one is parked", async () => {
    const q = await queue("fifo-head", { maxReceiveCount: 4, fifo: true });
    const ran: string[] = [];
    const handler = sqsConsumer<{ id: string }>(
      async ({ body }) => {
        if (body.id === "head") throw new TransientError("the head keeps failing");
        ran.push(body.id);
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope: name("fifo-head") },
        backoff: { baseSeconds: 0, maxSeconds: 0 },
        telemetry: recordingTelemetry(),
      },
    );
    await sendAll(sqs, q.url, [
      { body: '{"id":"head"}', groupId: "g", dedupId: "head" },
      { body: '{"id":"behind"}', groupId: "g", dedupId: "behind" },
    ]);
    const trigger = { queueUrl: q.url, queueArn: q.arn, functionName: "f", waitSeconds: 1 };
    // "behind" is received with the head every time and uses as many receives; on the last one the
    // head is parked and "behind" runs in the same batch.
    let invocations = 0;
    while (invocations < 6 && ran.length === 0) {
      await invokeFromQueue(sqs, handler, trigger);
      invocations++;
    }
    expect(ran).toEqual(["behind"]);
    const parked = await drainQueue(sqs, q.dlqUrl);
    expect(parked.map((m) => JSON.parse(m.Body!).id)).toEqual(["head"]);
  });
});

describeWithoutSqs("issue 14 item 14: a Kafka lease renewal that lands after complete()", () => {
  it("neither counts LeasesLost nor aborts the record's signal", async () => {
    // Renewals (UpdateItem on our own key) are held back 600 ms, so one started near the end of
    // the handler reaches DynamoDB after the completion has turned the item COMPLETED.
    const slow = new DynamoDBClient({});
    slow.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === "UpdateItemCommand") {
          const input = args.input as { UpdateExpression?: string };
          if (
            input.UpdateExpression?.includes("#lease = :lease") &&
            !input.UpdateExpression.includes("#status")
          )
            await sleep(600);
        }
        return next(args);
      },
      { step: "initialize", name: "slowRenewals" },
    );
    const telemetry = recordingTelemetry();
    let aborted = false;
    const process_ = createKafkaBatchProcessor(
      async (_envelope, { signal }) => {
        signal.addEventListener("abort", () => {
          aborted = true;
        });
        await sleep(1_150); // past the renewal check at a third of the 1.5 s lease
      },
      {
        consumer: "late-renewal",
        idempotency: { tableName: table, scope: name("late"), leaseMs: 1_500 },
        producer: getKafkaProducer(),
        dynamodbClient: slow,
        telemetry,
      },
    );
    const out = await process_(
      kafkaEvent("late", [{ offset: 1, value: { a: 1 }, id: "late-1" }]),
      lambdaContext(),
    );
    await sleep(1_000); // let the held-back renewal land
    expect(out).toEqual({ batchItemFailures: [] });
    expect(telemetry.counts[METRIC.leasesLost]).toBeUndefined();
    expect(aborted).toBe(false);
    slow.destroy();
  });
});

describe("issue 15 item 5: the Lambda deadline reaches each record's signal", () => {
  it("a running record's signal aborts at the run's deadline (issue 34 item 8: the settlement reserve before the timeout)", async () => {
    let aborted!: (reason: unknown) => void;
    const reason = new Promise((r) => {
      aborted = r;
    });
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    const clock = manualClock(30_000);
    const handler = sqsConsumer<{ id: string }>(
      async (_envelope, { signal }) => {
        started();
        await new Promise<void>((resolve) =>
          signal.addEventListener(
            "abort",
            () => {
              aborted(signal.reason);
              resolve();
            },
            { once: true },
          ),
        );
      },
      { idempotency: false, heartbeat: false, timeMarginMs: 0, timer: clock.timer },
    );
    const record = {
      messageId: "m-1",
      receiptHandle: "rh",
      body: '{"id":"a"}',
      attributes: { ApproximateReceiveCount: "1" },
      messageAttributes: {},
      md5OfBody: "",
      eventSource: "aws:sqs",
      eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:deadline",
      awsRegion: "us-east-1",
    };
    const answer = handler({ Records: [record] } as never, clock.context());
    await running;
    expect(clock.next().remainingMs).toBe(SQS_CONSUMER_DEFAULTS.settleReserveMs);
    expect(await reason).toBeInstanceOf(RecordTimeoutError);
    await answer;
  });
});

describe("issue 13: a batch that needs nothing of its queue makes no call for it", () => {
  it("with idempotency off, a short batch calls neither GetQueueUrl nor GetQueueAttributes, and a lookup that would fail logs nothing", async () => {
    const q = await queue("no-lookup");
    const lookups: string[] = [];
    const client = createSqsClient();
    // A real client; the lookups are seen (and refused, as a missing IAM permission would be) in its stack.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (
          context.commandName === "GetQueueUrlCommand" ||
          context.commandName === "GetQueueAttributesCommand"
        ) {
          lookups.push(context.commandName);
          throw Object.assign(new Error("not authorized"), { name: "AccessDenied" });
        }
        return next(args);
      },
      { step: "initialize", name: "refuseQueueLookups" },
    );
    const telemetry = recordingTelemetry();
    const errors = vi.spyOn(telemetry.logger, "error");
    let runs = 0;
    const handler = sqsConsumer<{ id: string }>(
      async () => {
        runs++;
      },
      { schema: Msg, idempotency: false, sqsClient: client, telemetry },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"a"}' }, { body: '{"id":"b"}' }, { body: '{"id":"c"}' }]);
    const out = await invokeFromQueue(sqs, handler, { queueUrl: q.url, queueArn: q.arn, functionName: "f" });
    expect(out.received).toBe(3);
    expect(out.failed).toEqual([]);
    expect(runs).toBe(3);
    expect(lookups).toEqual([]);
    expect(errors).not.toHaveBeenCalled();
  });
});

describe("issue 21: the requeue of healthy records respects SQS's batch limits", () => {
  /** The one copy on the queue, once its delay (the holder's lease) is over: read with a short poll loop. */
  async function receiveDelayed(url: string): Promise<Message> {
    for (let i = 0; i < 120; i++) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 1,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ["All"],
          MessageSystemAttributeNames: ["All"],
        }),
      );
      if (out.Messages?.[0]) return out.Messages[0];
    }
    throw new Error("no copy arrived");
  }

  /** A consumer whose every record is held elsewhere (a lease another invocation renews). */
  async function heldEverywhere(
    what: string,
    ids: string[],
    key?: (m: { id: string }) => string,
    leaseMs = 60_000,
  ) {
    const scope = name(what);
    const holder = createDedupStore({ tableName: table, scope, client: ddb, leaseMs });
    for (const id of ids)
      if ((await holder.claim(id)).status !== "claimed") throw new Error(`not holding ${id}`);
    const telemetry = recordingTelemetry();
    const handler = sqsConsumer<{ id: string }>(async () => undefined, {
      ...(key ? { key } : {}),
      idempotency: { tableName: table, scope },
      backoff: { baseSeconds: 0, maxSeconds: 0 },
      telemetry,
    });
    return { handler, telemetry };
  }

  it("four 300 KB records on their last receive are requeued in SendMessageBatch calls of at most 1 MiB, none dead-lettered", async () => {
    const q = await queue("large", { maxReceiveCount: 1 });
    const ids = ["L1", "L2", "L3", "L4"];
    const { handler, telemetry } = await heldEverywhere("large", ids, (m) => m.id);
    const pad = "x".repeat(300_000);
    // The sender obeys the 1 MiB limit too: three, then one.
    await sendAll(
      sqs,
      q.url,
      ids.slice(0, 3).map((id) => ({ body: JSON.stringify({ id, pad }) })),
    );
    await sendAll(sqs, q.url, [{ body: JSON.stringify({ id: "L4", pad }) }]);
    const out = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      waitSeconds: 5,
      batchSize: 10,
    });
    // One batch of all four (1.2 MB): one SendMessageBatch would have been refused whole.
    expect(out.received).toBe(4);
    expect(out.failed).toEqual([]);
    expect(telemetry.counts[METRIC.requeued]).toBe(4);
    expect(await drainQueue(sqs, q.dlqUrl)).toHaveLength(0);
    // The copies wait out the holder's lease as their delay.
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: q.url,
        AttributeNames: ["ApproximateNumberOfMessagesDelayed"],
      }),
    );
    expect(attributes.Attributes?.ApproximateNumberOfMessagesDelayed).toBe("4");
  });

  it("a record with 10 attributes of its own is requeued with 10 at most: its attributes and dedup id folded, and read back", async () => {
    const q = await queue("ten-attributes", { maxReceiveCount: 1 });
    const user = Object.fromEntries(
      Array.from({ length: 10 }, (_, i) => [`a${i}`, { DataType: "String", StringValue: `v${i}` }]),
    );
    const sent = await sqs.send(
      new SendMessageCommand({ QueueUrl: q.url, MessageBody: '{"id":"t1"}', MessageAttributes: user }),
    );
    // No business key and no producer id: the dedup id is the broker's messageId, which a copy would not keep.
    const { handler, telemetry } = await heldEverywhere(
      "ten-attributes",
      [sent.MessageId!],
      undefined,
      3_000,
    );
    const out = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      waitSeconds: 5,
    });
    expect(out.failed).toEqual([]);
    expect(telemetry.counts[METRIC.requeued]).toBe(1);
    const copy = await receiveDelayed(q.url);
    expect(Object.keys(copy!.MessageAttributes ?? {}).length).toBeLessThanOrEqual(10);
    // The consumer reads the copy's headers and dedup id as the original's.
    const envelope = await toSqsEnvelope(toSqsRecord(copy!, q.arn), {});
    expect(envelope.id).toBe(sent.MessageId);
    expect(envelope.idSource).not.toBe("broker");
    for (let i = 0; i < 10; i++) expect(envelope.headers[`a${i}`]).toBe(`v${i}`);
  });
});

describe("issue 34 item 2: every copy carries the id its record deduplicated under", () => {
  /**
   * The consumer's own SQS client, with its copies sent without their delay: a copy waits out the
   * holder's lease (minutes here, so the holder holds throughout with no renewal racing the clock);
   * this test is about what a copy carries, not when it comes back.
   */
  function copiesWithoutDelay() {
    const client = createSqsClient();
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { Entries?: Array<{ DelaySeconds?: number }> };
        for (const entry of input.Entries ?? []) if (entry.DelaySeconds !== undefined) entry.DelaySeconds = 0;
        return next(args);
      },
      { step: "initialize", name: "copiesWithoutDelay" },
    );
    return client;
  }

  it.each([
    ["beside one user attribute (x-failure-context)", 1],
    ["folded with 10 user attributes (x-folded-attributes)", 10],
  ])("a redriven record held elsewhere, its copy and the copy's copy never run again: %s", async (_, n) => {
    const what = `redriven-${n}`;
    const q = await queue(what, { maxReceiveCount: 1 });
    const scope = name(what);
    const first = `first-delivery-${n}`;
    // The record's first delivery is still running elsewhere: its holder keeps the key for 10 min.
    const holder = createDedupStore({ tableName: table, scope, client: ddb, leaseMs: 600_000 });
    const held = await holder.claim(first);
    if (held.status !== "claimed") throw new Error(`expected to hold ${first}, got ${held.status}`);
    // The record as SQS's move task hands it back from the DLQ: the user's attributes and the
    // context the consumer parked it with, the id inside that context only.
    const user = Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`a${i}`, { DataType: "String", StringValue: `v${i}` }]),
    );
    const context = { "x-message-id": first, "x-last-error": "TransientError: timeout" };
    await sendAll(sqs, q.url, [
      { body: '{"id":"r"}', attributes: toSdkAttributes(packAttributes(user, context)) },
    ]);
    let runs = 0;
    const telemetry = recordingTelemetry();
    const handler = sqsConsumer(
      async () => {
        runs++;
      },
      {
        idempotency: { tableName: table, scope },
        backoff: { baseSeconds: 0, maxSeconds: 0 },
        sqsClient: copiesWithoutDelay(),
        telemetry,
      },
    );
    const trigger = { queueUrl: q.url, queueArn: q.arn, functionName: "f", waitSeconds: 5 };
    // The redriven record, its copy, and the copy's copy, each on its last receive while held.
    for (let depth = 0; depth < 3; depth++) {
      const out = await invokeFromQueue(sqs, handler, trigger);
      expect(out.received).toBe(1);
      expect(runs, `the copy of depth ${depth} ran its effect a second time`).toBe(0);
      expect(telemetry.counts[METRIC.requeued]).toBe(depth + 1);
    }
    // The first delivery finishes its effect: the latest copy is its duplicate, acked without a run.
    await holder.complete(held.lease);
    const out = await invokeFromQueue(sqs, handler, trigger);
    expect(out).toMatchObject({ received: 1, failed: [] });
    expect(runs).toBe(0);
    expect(telemetry.counts[METRIC.duplicates]).toBe(1);
    expect(await drainQueue(sqs, q.dlqUrl)).toHaveLength(0);
  });
});
