import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, GetItemCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { METRIC } from "reliable-consumers";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { createDedupTable, deleteTable, invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dedupPk } from "../../lib/dedup/schema.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, sendAll, type TestQueue } from "../support/queues.ts";
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
