import { setTimeout as sleep } from "node:timers/promises";
import { ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { createDedupStore, METRIC } from "reliable-consumers";
import { createRetryLadder, disconnectAllKafkaProducers, getKafkaProducer } from "reliable-consumers/kafka";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createKafkaBatchProcessor } from "../../lib/kafka/kafkaBatchProcessor.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { type ConsumedRecord, toMskEvent } from "../../local/src/services/kafka/mskEventBuilder.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { toSqsRecord } from "../../local/src/services/sqs/trigger.ts";
import { dynamodb } from "../support/clients.ts";
import { declareLadder, recordingTelemetry } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, sendAll, type TestQueue } from "../support/queues.ts";
import { countRequests } from "../support/requestCounter.ts";

/**
 * On Lambda Managed Instances one execution environment serves several invocations at once, so the
 * consumer's container-scope state (the dedup store and its statement coalescers) is shared by
 * concurrent batches. A key present in two of them must cost one record a redelivery, not fail both
 * batches: DynamoDB rejects a whole BatchExecuteStatement that names one item twice.
 */
const name = names(import.meta.url);
const ddb = dynamodb();
const sqs = createSqsClient();
const table = name("dedup");
const queues: TestQueue[] = [];

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await disconnectAllKafkaProducers();
  await deleteTable(ddb, table);
  await Promise.all(queues.map((q) => deleteQueues(sqs, q)));
});

describe("concurrent invocations in one process", () => {
  it("the dedup store: a key claimed by two invocations at once is claimed once, the rest of both batches too", async () => {
    const store = createDedupStore({ tableName: table, scope: name("store"), client: ddb });
    const batch = (tag: string) => ["shared", `${tag}-1`, `${tag}-2`, `${tag}-3`, `${tag}-4`];
    const [one, two] = await Promise.all(
      ["a", "b"].map((tag) => Promise.all(batch(tag).map((key) => store.claim(key)))),
    );
    const all = [...one!, ...two!];
    expect(all.filter((c) => c.status === "claimed")).toHaveLength(9);
    const shared = [one![0]!, two![0]!].map((c) => c.status).sort();
    expect(shared).toEqual(["claimed", "in-progress"]);

    // Completing it here makes the key a duplicate for the next claim, from this process or another.
    const winner = [one![0]!, two![0]!].find((c) => c.status === "claimed");
    if (winner?.status !== "claimed") throw new Error("no winner");
    await store.complete(winner.lease);
    await store.flush();
    expect((await store.claim("shared")).status).toBe("duplicate");
    const elsewhere = createDedupStore({ tableName: table, scope: name("store"), client: ddb });
    expect((await elsewhere.claim("shared")).status).toBe("duplicate");
  });

  it("the dedup store: completions of one item never share a request", async () => {
    // Two stores in one process stand for a completion racing a re-claim after a lost lease: both
    // write the same item; neither request may carry it twice.
    const scope = name("complete");
    const client = dynamodb();
    const store = createDedupStore({ tableName: table, scope, client, leaseMs: 1 });
    const first = await store.claim("k");
    if (first.status !== "claimed") throw new Error(first.status);
    await sleep(5); // the first lease lapses
    const second = await store.claim("k");
    if (second.status !== "claimed") throw new Error(`expected a re-claim, got ${second.status}`);
    const counter = countRequests(client);
    const results = await Promise.allSettled([store.complete(first.lease), store.complete(second.lease)]);
    // The stale lease is fenced out; the current one completes.
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled"]);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ name: "LeaseLostError" });
    expect(counter.byCommand.BatchExecuteStatementCommand).toBe(2);
  });

  it("sqsConsumer: two concurrent 5-record batches sharing a business key run 9 effects and redeliver one record", async () => {
    const q = await createQueueWithDlq(sqs, name("sqs"));
    queues.push(q);
    const effects: string[] = [];
    const telemetry = recordingTelemetry();
    const Msg = z.object({ id: z.string(), from: z.string() });
    const handler = sqsConsumer(
      async ({ body }) => {
        await sleep(20);
        effects.push(`${body.id}@${body.from}`);
      },
      {
        schema: Msg,
        key: (m) => m.id,
        idempotency: { tableName: table, scope: name("sqs-scope") },
        telemetry,
        heartbeat: false,
      },
    );
    const bodies = ["a", "b"].flatMap((tag) =>
      ["shared", `${tag}-1`, `${tag}-2`, `${tag}-3`, `${tag}-4`].map((id) => ({ id, from: tag })),
    );
    await sendAll(
      sqs,
      q.url,
      bodies.map((b) => ({ body: JSON.stringify(b) })),
    );
    const received = [];
    while (received.length < bodies.length) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: q.url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          VisibilityTimeout: 60,
          MessageSystemAttributeNames: ["All"],
        }),
      );
      received.push(...(out.Messages ?? []));
    }
    const records = received.map((m) => toSqsRecord(m, q.arn));
    const events: SQSEvent[] = ["a", "b"].map((tag) => ({
      Records: records.filter((r) => (JSON.parse(r.body) as { from: string }).from === tag),
    }));
    expect(events.map((e) => e.Records.length)).toEqual([5, 5]);

    const responses = (await Promise.all(
      events.map((event) => handler(event, lambdaContext("concurrent-sqs", 30_000))),
    )) as SQSBatchResponse[];

    const failed = responses.flatMap((r) => r.batchItemFailures.map((f) => f.itemIdentifier));
    expect(failed).toHaveLength(1);
    const failedBody = JSON.parse(records.find((r) => r.messageId === failed[0])!.body) as { id: string };
    expect(failedBody.id).toBe("shared");
    expect(effects).toHaveLength(9);
    expect(new Set(effects.map((e) => e.split("@")[0])).size).toBe(9);
    expect(telemetry.counts[METRIC.inProgressElsewhere]).toBe(1);

    // The redelivered copy comes back once the winner completed: it is a duplicate now.
    const again = records.find((r) => r.messageId === failed[0])!;
    const retry = (await handler(
      { Records: [again] },
      lambdaContext("concurrent-sqs", 30_000),
    )) as SQSBatchResponse;
    expect(retry.batchItemFailures).toEqual([]);
    expect(effects).toHaveLength(9);
    expect(telemetry.counts[METRIC.duplicates]).toBe(1);
  });

  it("kafkaConsumer: two concurrent batches (two partitions) sharing a key run 9 effects; only the contended record is routed, with no attempt used", async () => {
    const topic = name("pay");
    const ladder = createRetryLadder({ delays: ["150ms"] });
    // A real broker creates no topic on first use (MSK's default): the ladder is declared.
    await declareLadder(ladder, topic);
    const effects: string[] = [];
    const telemetry = recordingTelemetry();
    const process = createKafkaBatchProcessor<{ id: string }>(
      async (env) => {
        await sleep(20);
        effects.push(env.body.id);
      },
      {
        consumer: "concurrent-test",
        idempotency: { tableName: table, scope: name("kafka-scope") },
        retry: ladder,
        producer: getKafkaProducer(),
        dynamodbClient: ddb,
        telemetry,
      },
    );
    const record = (partition: number, offset: number, id: string): ConsumedRecord => ({
      topic,
      partition,
      message: {
        key: Buffer.from(id),
        value: Buffer.from(JSON.stringify({ id })),
        offset: String(offset),
        timestamp: String(Date.now()),
        headers: { "message-id": id },
      },
    });
    const batch = (partition: number, tag: string) =>
      ["shared", `${tag}-1`, `${tag}-2`, `${tag}-3`, `${tag}-4`].map((id, offset) =>
        record(partition, offset, id),
      );

    const responses = await Promise.all(
      [batch(0, "a"), batch(1, "b")].map((b) => process(toMskEvent(b), lambdaContextFor(60_000))),
    );

    expect(effects.sort()).toEqual(["shared", "a-1", "a-2", "a-3", "a-4", "b-1", "b-2", "b-3", "b-4"].sort());
    // The loser has not failed: it goes onto the ladder without using up an attempt (routeFailure's
    // "contended"), where it meets the winner's completion as a duplicate. Before the fix all ten
    // records failed and climbed the ladder.
    expect(telemetry.counts[METRIC.inProgressElsewhere]).toBe(1);
    expect(telemetry.counts[METRIC.retried]).toBe(1);
    expect(telemetry.counts[METRIC.deadLettered] ?? 0).toBe(0);
    expect(responses.flatMap((r) => r.batchItemFailures)).toEqual([]);
  });
});

function lambdaContextFor(remainingMs: number) {
  return lambdaContext("concurrent-kafka", remainingMs);
}
