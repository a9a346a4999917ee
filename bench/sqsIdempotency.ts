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
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSEvent, SQSRecord } from "aws-lambda";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { createDedupTable } from "reliable-consumers/testing";
import { lambdaContext } from "../lib/local/lambdaContext.ts";
import { type CeilingFigure, fractionOf, partiqlWriteCeiling, putItemWriteCeiling } from "./ceilings.ts";
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
  /** Write units per second over the whole run: what the ceiling probe is compared with. */
  writeUnitsPerSec: number;
  /** Share of the run's wall time with a DynamoDB request of this side in flight. */
  ddbBusyShare: number;
  byCommand: Record<string, number>;
}

export type Handler = (
  event: SQSEvent,
  context: ReturnType<typeof lambdaContext>,
) => Promise<{ batchItemFailures: unknown[] }>;

/** Builds one side's handler: its dedup table, how it reaches DynamoDB, the simulated work per order. */
export type SideFactory = (
  client: DynamoDBClient,
  table: string,
  work: (b: { orderId: string }) => Promise<void>,
) => Handler;

/** Our consumer as a side: keyed by orderId, deduplicated on `table`. */
export const ourSide =
  (sqs: SQSClient): SideFactory =>
  (client, table, work) =>
    sqsConsumer<{ orderId: string }>(async ({ body }) => work(body), {
      key: (b) => b.orderId,
      idempotency: { tableName: table },
      dynamodbClient: client,
      sqsClient: sqs,
    }) as unknown as Handler;

/** A queue of the bench's own; its ARN is the records' eventSourceARN. */
export async function benchQueueArn(sqs: SQSClient, name: string): Promise<string> {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  const attributes = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }),
  );
  return attributes.Attributes!.QueueArn!;
}

/** One side's run of the workload; `client` is how its handler reaches DynamoDB (the gateway bench's own). */
export async function runSide(
  make: SideFactory,
  createTable: (client: DynamoDBClient, table: string) => Promise<void>,
  o: SqsBenchOptions,
  queueArn: string,
  tag: string,
  client: DynamoDBClient = new DynamoDBClient({}),
): Promise<SideResult> {
  const table = `bench-${tag}`;
  await createTable(new DynamoDBClient({}), table);
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
    writeUnitsPerSec: Math.round(count.writeUnits / seconds),
    ddbBusyShare: round(count.busyMs / (seconds * 1000), 3),
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
  const arn = await benchQueueArn(sqs, "bench-orders");
  const ours = ourSide(sqs);
  const theirs: SideFactory = (client, table, work) =>
    powertoolsSqsHandler(client, table, work) as unknown as Handler;

  // Alternate sides so drift in the JVM or the machine hits both alike. Each round pairs one run of
  // each side back to back; the ratio is the median of the paired rounds' ratios (robust to a noisy
  // round), and each side's figures are from its median round.
  // Each side is followed by its ceiling probe on the same DynamoDB Local (bench/ceilings.ts): the
  // same writes, in the same shape and at the same concurrency, with no consumer around them.
  const probeClient = new DynamoDBClient({});
  const inFlight = Math.ceil(o.batchSize / 25);
  const rounds: Round[] = [];
  for (let r = 0; r < o.rounds; r++) {
    const a = await runSide(ours, createDedupTable, o, arn, `ours-${r}`);
    const ca = await partiqlWriteCeiling(probeClient, `bench-ours-${r}`, a.newMessages, inFlight);
    const b = await runSide(theirs, powertoolsTable, o, arn, `pt-${r}`);
    const cb = await putItemWriteCeiling(probeClient, `bench-pt-${r}`, b.newMessages, 50);
    rounds.push({
      ours: a,
      powertools: b,
      ratio: a.msgsPerSec / b.msgsPerSec,
      ceilings: { ours: ca, powertools: cb },
      fractions: {
        ours: fractionOf(a.writeUnitsPerSec, ca.perSec),
        powertools: fractionOf(b.writeUnitsPerSec, cb.perSec),
      },
    });
    console.error(
      `round ${r + 1}: ours ${a.msgsPerSec} msg/s (${rounds.at(-1)!.fractions.ours} of its ceiling), powertools ${b.msgsPerSec} msg/s (${rounds.at(-1)!.fractions.powertools})`,
    );
  }
  probeClient.destroy();
  return summarise(o, rounds);
}

interface Round {
  ours: SideResult;
  powertools: SideResult;
  ratio: number;
  ceilings: { ours: CeilingFigure; powertools: CeilingFigure };
  fractions: { ours: number; powertools: number };
}

const medianOf = <T>(items: T[], by: (t: T) => number): T =>
  [...items].sort((x, y) => by(x) - by(y))[Math.floor((items.length - 1) / 2)]!;

/** Each side's median round, the median paired ratio, and each side's median fraction of its ceiling. */
function summarise(o: SqsBenchOptions, rounds: Round[]) {
  return {
    workload: o,
    ours: medianOf(rounds, (r) => r.ours.msgsPerSec).ours,
    powertools: medianOf(rounds, (r) => r.powertools.msgsPerSec).powertools,
    ratio: round(medianOf(rounds, (r) => r.ratio).ratio, 2),
    roundRatios: rounds.map((r) => round(r.ratio, 2)),
    ceilingFraction: {
      ours: medianOf(rounds, (r) => r.fractions.ours).fractions.ours,
      powertools: medianOf(rounds, (r) => r.fractions.powertools).fractions.powertools,
    },
    ceilings: {
      ours: `conditional PartiQL writes (claim INSERT + fenced completion UPDATE), 25 per BatchExecuteStatement, ${Math.ceil(o.batchSize / 25)} in flight`,
      powertools: "a conditional PutItem then an UpdateItem per key, 50 in flight",
      oursWritesPerSec: medianOf(rounds, (r) => r.ceilings.ours.perSec).ceilings.ours.perSec,
      powertoolsWritesPerSec: medianOf(rounds, (r) => r.ceilings.powertools.perSec).ceilings.powertools
        .perSec,
    },
    roundFractions: rounds.map((r) => r.fractions),
    // Where the rest of the ceiling goes: the share of each side's median round with no DynamoDB
    // request of its own in flight (its handlers, the SQS calls, the consumer's own CPU).
    ddbBusyShare: {
      ours: medianOf(rounds, (r) => r.ours.msgsPerSec).ours.ddbBusyShare,
      powertools: medianOf(rounds, (r) => r.powertools.msgsPerSec).powertools.ddbBusyShare,
    },
  };
}
