/**
 * SQS idempotency benchmark: the same SQS-shaped batches through our consumer and through
 * Powertools, against the same DynamoDB Local, side by side in one process.
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  BatchExecuteStatementCommand,
  CreateTableCommand,
  DynamoDBClient,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import type { SQSEvent, SQSRecord } from "aws-lambda";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { createDedupTable } from "reliable-consumers/testing";
import { lambdaContext } from "../lib/local/lambdaContext.ts";
import { countDynamoDb, type DynamoDbCount } from "./ddbCounter.ts";
import { powertoolsSqsHandler } from "./peers.ts";

export interface SqsBenchOptions {
  batches: number;
  batchSize: number;
  duplicateRate: number;
  handlerMs: number;
  rounds: number;
}

export const DEFAULT_SQS_BENCH: SqsBenchOptions = {
  batches: 20,
  batchSize: 100,
  duplicateRate: 0.1,
  handlerMs: 2,
  rounds: 6,
};

/** A seeded PRNG so both sides see the very same workload. */
function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Batches where `duplicateRate` of the records repeat a recent key (some in the same batch, some across). */
export function workload(
  o: SqsBenchOptions,
  queueArn: string,
  tag: string,
): { events: SQSEvent[]; unique: number } {
  const random = mulberry32(42);
  const keys: string[] = [];
  const events: SQSEvent[] = [];
  let n = 0;
  for (let b = 0; b < o.batches; b++) {
    const Records: SQSRecord[] = [];
    for (let i = 0; i < o.batchSize; i++) {
      let key: string;
      if (keys.length > 0 && random() < o.duplicateRate) {
        key = keys[Math.max(0, keys.length - 1 - Math.floor(random() * 150))]!;
      } else {
        key = `${tag}-order-${keys.length}`;
        keys.push(key);
      }
      n++;
      Records.push({
        messageId: `${tag}-m-${n}`,
        receiptHandle: `rh-${n}`,
        body: JSON.stringify({ orderId: key, customerId: "c", amountCents: 100 }),
        attributes: {
          ApproximateReceiveCount: "1",
          SentTimestamp: String(Date.now()),
          SenderId: "bench",
          ApproximateFirstReceiveTimestamp: String(Date.now()),
        },
        messageAttributes: {},
        md5OfBody: "",
        eventSource: "aws:sqs",
        eventSourceARN: queueArn,
        awsRegion: "us-east-1",
      });
    }
    events.push({ Records });
  }
  return { events, unique: keys.length };
}

export interface SideResult {
  msgsPerSec: number;
  records: number;
  newMessages: number;
  effects: number;
  duplicateEffects: number;
  failedRecords: number;
  ddbRequests: number;
  ddbRequestsPerNewMessage: number;
  writeUnitsPerNewMessage: number;
  readUnitsPerNewMessage: number;
  byCommand: Record<string, number>;
}

type Handler = (
  event: SQSEvent,
  context: ReturnType<typeof lambdaContext>,
) => Promise<{ batchItemFailures: unknown[] }>;

async function runSide(
  make: (client: DynamoDBClient, table: string, work: (b: { orderId: string }) => Promise<void>) => Handler,
  createTable: (client: DynamoDBClient, table: string) => Promise<void>,
  o: SqsBenchOptions,
  queueArn: string,
  tag: string,
): Promise<SideResult> {
  const client = new DynamoDBClient({});
  const table = `bench-${tag}`;
  await createTable(client, table);
  const count: DynamoDbCount = countDynamoDb(client);
  const effects = new Map<string, number>();
  const handler = make(client, table, async ({ orderId }) => {
    await sleep(o.handlerMs); // simulated I/O
    effects.set(orderId, (effects.get(orderId) ?? 0) + 1);
  });
  const { events, unique } = workload(o, queueArn, tag);
  let failed = 0;
  const t0 = performance.now();
  for (const event of events) {
    const out = await handler(event, lambdaContext("bench-consumer", 900_000));
    failed += out.batchItemFailures.length;
  }
  const seconds = (performance.now() - t0) / 1000;
  const records = o.batches * o.batchSize;
  const applied = [...effects.values()].reduce((a, b) => a + b, 0);
  return {
    msgsPerSec: Math.round(records / seconds),
    records,
    newMessages: unique,
    effects: applied,
    duplicateEffects: applied - effects.size,
    failedRecords: failed,
    ddbRequests: count.requests,
    ddbRequestsPerNewMessage: round(count.requests / unique, 3),
    writeUnitsPerNewMessage: round(count.writeUnits / unique, 3),
    readUnitsPerNewMessage: round(count.readUnits / unique, 3),
    byCommand: count.byCommand,
  };
}

const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d;

async function powertoolsTable(client: DynamoDBClient, table: string) {
  await client.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
    }),
  );
}

/** DynamoDB Local's JVM speeds up ~2.5× over its first ~20,000 requests: warm it before measuring. */
export async function warmUp(requests = 20_000): Promise<void> {
  const client = new DynamoDBClient({});
  await createDedupTable(client, "bench-warmup");
  let next = 0;
  await Promise.all(
    Array.from({ length: 40 }, async () => {
      while (next < requests) {
        const i = next++;
        // Exercise the paths both sides use: plain and conditional writes, and PartiQL batches.
        const write =
          i % 50 === 0
            ? client.send(
                new BatchExecuteStatementCommand({
                  Statements: Array.from({ length: 25 }, (_, j) => ({
                    Statement: `UPDATE "bench-warmup" SET "v" = ? WHERE "pk" = ? AND "v" >= ?`,
                    Parameters: [{ N: String(i) }, { S: `w${(i + j) % 5000}` }, { N: "0" }],
                  })),
                }),
              )
            : client.send(
                new PutItemCommand({
                  TableName: "bench-warmup",
                  Item: { pk: { S: `w${i % 5000}` }, v: { N: String(i) } },
                  ConditionExpression: i % 2 ? "attribute_not_exists(pk)" : undefined,
                }),
              );
        await write.catch(() => undefined);
      }
    }),
  );
}

export async function runSqsBench(o: SqsBenchOptions = DEFAULT_SQS_BENCH) {
  const sqs = createSqsClient();
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: "bench-orders" }))).QueueUrl!;
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] })))
    .Attributes!.QueueArn!;
  const ours = (client: DynamoDBClient, table: string, work: (b: { orderId: string }) => Promise<void>) =>
    sqsConsumer<{ orderId: string }>(async ({ body }) => work(body), {
      key: (b) => b.orderId,
      idempotency: { tableName: table },
      dynamodbClient: client,
      sqsClient: sqs,
    }) as unknown as Handler;
  const theirs = (client: DynamoDBClient, table: string, work: (b: { orderId: string }) => Promise<void>) =>
    powertoolsSqsHandler(client, table, work) as unknown as Handler;

  // Alternate sides so drift in the JVM or the machine hits both alike. Each round pairs one run of
  // each side back to back; the ratio is the median of the paired rounds' ratios (robust to a noisy
  // round), and each side's figures are from its median round.
  const rounds: { ours: SideResult; powertools: SideResult; ratio: number }[] = [];
  for (let r = 0; r < o.rounds; r++) {
    const a = await runSide(ours, createDedupTable, o, arn, `ours-${r}`);
    const b = await runSide(theirs, powertoolsTable, o, arn, `pt-${r}`);
    rounds.push({ ours: a, powertools: b, ratio: a.msgsPerSec / b.msgsPerSec });
    console.error(`round ${r + 1}: ours ${a.msgsPerSec} msg/s, powertools ${b.msgsPerSec} msg/s`);
  }
  const medianOf = <T>(items: T[], by: (t: T) => number): T =>
    [...items].sort((x, y) => by(x) - by(y))[Math.floor((items.length - 1) / 2)]!;
  return {
    workload: o,
    ours: medianOf(rounds, (r) => r.ours.msgsPerSec).ours,
    powertools: medianOf(rounds, (r) => r.powertools.msgsPerSec).powertools,
    ratio: round(medianOf(rounds, (r) => r.ratio).ratio, 2),
    roundRatios: rounds.map((r) => round(r.ratio, 2)),
  };
}
