import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, GetItemCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse } from "aws-lambda";
import { METRIC, PermanentError } from "reliable-consumers";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dedupPk } from "../../lib/dedup/schema.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { toSqsRecord } from "../../local/src/services/sqs/trigger.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, drainQueue, sendAll, type TestQueue } from "../support/queues.ts";
import { recordingTelemetry } from "../support/telemetry.ts";

const name = names(import.meta.url);
const table = name("dedup");
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const queues: TestQueue[] = [];
const worker = fileURLToPath(new URL("../fixtures/sqsWorker.ts", import.meta.url));

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await deleteTable(ddb, table);
  await Promise.all(queues.map((q) => deleteQueues(sqs, q)));
});

async function queue(what: string, visibilityTimeout: number) {
  const q = await createQueueWithDlq(sqs, name(what), { visibilityTimeout });
  queues.push(q);
  return q;
}

/** Receives with a short visibility so a stolen copy would show; returns how many were seen. */
async function peekCount(url: string): Promise<number> {
  const out = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
  );
  return out.Messages?.length ?? 0;
}

function startWorker(
  q: TestQueue,
  env: Record<string, string>,
): { child: ChildProcess; started: Promise<void> } {
  const child = spawn(process.execPath, [worker], {
    env: { ...process.env, QUEUE_URL: q.url, QUEUE_ARN: q.arn, EFFECT_TABLE: table, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const started = new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => d.toString().includes("STARTED") && resolve());
    child.once("exit", (code) => reject(new Error(`worker exited (${code}) before starting`)));
  });
  return { child, started };
}

async function kill(child: ChildProcess) {
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

describe("visibility heartbeat and crashes", () => {
  it("keeps a job longer than the visibility timeout from being redelivered while it runs", async () => {
    const q = await queue("long", 2);
    const telemetry = recordingTelemetry();
    let runs = 0;
    const handler = sqsConsumer<{ id: string }>(
      async () => {
        runs++;
        await sleep(5_000);
      },
      { key: (m) => m.id, idempotency: { tableName: table, scope: "long", leaseMs: 2_000 }, telemetry },
    );
    await sendAll(sqs, q.url, [{ body: '{"id":"job"}' }]);
    const job = invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      timeoutMs: 60_000,
    });
    // Poll the queue throughout the job, 2.5× past its visibility timeout.
    let stolen = 0;
    for (let i = 0; i < 10; i++) {
      await sleep(450);
      stolen += await peekCount(q.url);
    }
    const result = await job;
    expect(stolen).toBe(0);
    expect(result.failed).toEqual([]);
    expect(result.deleted).toBe(1);
    expect(runs).toBe(1);
    expect(telemetry.counts[METRIC.heartbeatExtensions]).toBeGreaterThanOrEqual(2);
    expect(telemetry.counts[METRIC.leasesLost]).toBeUndefined();
  });

  it("lets a crashed job's message come back, and the next holder processes it once the lease is over", async () => {
    const q = await queue("crash", 2);
    await sendAll(sqs, q.url, [{ body: '{"id":"c1"}' }]);
    const { child, started } = startWorker(q, { WORK_MS: "30000", LEASE_MS: "1500" });
    await started;
    await sleep(2_500); // the heartbeat has extended at least once
    await kill(child); // crash between claim and completion

    const handlerRuns: string[] = [];
    const handler = sqsConsumer<{ id: string }>(
      async ({ body }) => {
        handlerRuns.push(body.id);
      },
      { key: (m) => m.id, idempotency: { tableName: table, scope: "crash", leaseMs: 1_500 } },
    );
    let result = { received: 0, failed: [] as string[] };
    for (let i = 0; i < 20 && handlerRuns.length === 0; i++) {
      result = await invokeFromQueue(sqs, handler, {
        queueUrl: q.url,
        queueArn: q.arn,
        functionName: "f",
        waitSeconds: 2,
      });
    }
    expect(handlerRuns).toEqual(["c1"]);
    expect(result.failed).toEqual([]);
    const item = await ddb.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: dedupPk("crash", "c1") } } }),
    );
    expect(item.Item?.status?.S).toBe("COMPLETED");
    expect(Number(item.Item?.attempts?.N)).toBe(2);
    // The killed worker applied no effect.
    const effects = await ddb.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: "begins_with(pk, :p)",
        ExpressionAttributeValues: { ":p": { S: "effect#c1" } },
      }),
    );
    expect(effects.Count).toBe(0);
  });
});

describe("issue 34 item 9: every record of a batch stays in flight until the answer", () => {
  it("a record that finished early is not handed to another invocation while a slow one runs past the visibility timeout; a parked one is parked once", {
    timeout: 90_000,
  }, async () => {
    const visibilitySeconds = 4;
    const q = await queue("finished-early", visibilitySeconds);
    // When the heartbeat's extensions landed, seen in the consumer's own (real) client.
    const beats: number[] = [];
    const client = createSqsClient();
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === "ChangeMessageVisibilityBatchCommand") beats.push(Date.now());
        return out;
      },
      { step: "initialize", name: "seeBeats" },
    );
    let releaseSlow!: () => void;
    const slowReleased = new Promise<void>((r) => {
      releaseSlow = r;
    });
    let slowStarted!: () => void;
    const slowRunning = new Promise<void>((r) => {
      slowStarted = r;
    });
    const runs: string[] = [];
    const handler = sqsConsumer<{ id: string }>(
      async ({ body }) => {
        runs.push(body.id);
        if (body.id === "poison") throw new PermanentError("cannot be processed");
        if (body.id === "slow") {
          slowStarted();
          await slowReleased;
        }
      },
      {
        key: (m) => m.id,
        idempotency: { tableName: table, scope: "finished-early" },
        sqsClient: client,
        telemetry: recordingTelemetry(),
      },
    );
    await sendAll(sqs, q.url, [
      { body: '{"id":"fast"}' },
      { body: '{"id":"poison"}' },
      { body: '{"id":"slow"}' },
    ]);
    const messages = [];
    while (messages.length < 3) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: q.url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ["All"],
          MessageAttributeNames: ["All"],
        }),
      );
      messages.push(...(out.Messages ?? []));
    }
    const receivedBy = Date.now();
    const event = { Records: messages.map((m) => toSqsRecord(m, q.arn)) };
    const answer = handler(event as never, lambdaContext("f", 60_000)) as Promise<SQSBatchResponse>;
    await slowRunning;
    // Bring the condition about: the heartbeat has beaten after the batch's original visibility
    // timeout ran out (so a record it did not extend is visible again by now).
    const pastVisibility = receivedBy + visibilitySeconds * 1000 + 500;
    for (let i = 0; i < 200 && !beats.some((at) => at >= pastVisibility); i++) await sleep(100);
    expect(beats.some((at) => at >= pastVisibility)).toBe(true);

    // Another invocation polls the queue while the first batch still runs.
    const other = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "f",
      waitSeconds: 1,
    });
    releaseSlow();
    const response = await answer;
    expect(response.batchItemFailures).toEqual([]);
    // Lambda deletes what the first invocation acked.
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: q.url,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );

    const parked = await drainQueue(sqs, q.dlqUrl, 0);
    // Nothing was handed out again: each record ran once, and the parked one is in the DLQ once.
    expect({
      receivedByTheOther: other.received,
      runs: runs.sort(),
      parked: parked.map((m) => JSON.parse(m.Body!).id),
    }).toEqual({ receivedByTheOther: 0, runs: ["fast", "poison", "slow"], parked: ["poison"] });
    expect(await drainQueue(sqs, q.url, 0)).toEqual([]);
  });
});
