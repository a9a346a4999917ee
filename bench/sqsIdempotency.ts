/**
 * SQS idempotency benchmark: the same SQS-shaped batches through our consumer and through
 * Powertools, against the same DynamoDB Local, side by side in one process.
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  BatchExecuteStatementCommand,
  BatchGetItemCommand,
  CreateTableCommand,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSEvent, SQSRecord } from "aws-lambda";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { createDedupTable, deleteTable } from "../local/src/services/dynamodb/dedupTable.ts";
import { lambdaContext } from "../local/src/services/lambda/lambdaContext.ts";
import {
  batchShapedCeiling,
  type CeilingFigure,
  fractionOf,
  partiqlWriteCeiling,
  putItemWriteCeiling,
} from "./ceilings.ts";
import { countDynamoDb, type DynamoDbCount } from "./ddbCounter.ts";
import { medianOf, round } from "./figures.ts";
import { powertoolsSqsHandler } from "./peers.ts";

export interface SqsBenchOptions {
  batches: number;
  batchSize: number;
  duplicateRate: number;
  handlerMs: number;
  rounds: number;
  /** Rounds run first and left out of the figures: each side's paths warm further in their first round. */
  warmupRounds: number;
  /**
   * Invocations in flight at once in the one process, each taking the next batch (Lambda Managed
   * Instances, where one environment serves several invocations; or the event source mapping's
   * concurrency). Each side's probes keep as many requests in flight as that many batches would.
   */
  invocations: number;
}

export const DEFAULT_SQS_BENCH: SqsBenchOptions = {
  batches: 20,
  batchSize: 100,
  duplicateRate: 0.1,
  handlerMs: 2,
  rounds: 6,
  warmupRounds: 1,
  invocations: 1,
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

/** Per batch of the workload: keys new to the table, and distinct keys it already holds. */
export function batchShapes(o: SqsBenchOptions): Array<{ newKeys: number; knownKeys: number }> {
  const seen = new Set<string>();
  return workload(o, "arn:aws:sqs:us-east-1:000000000000:shapes", "shape").events.map(({ Records }) => {
    const keys = new Set(Records.map((r) => (JSON.parse(r.body) as { orderId: string }).orderId));
    const known = [...keys].filter((k) => seen.has(k)).length;
    for (const k of keys) seen.add(k);
    return { newKeys: keys.size - known, knownKeys: known };
  });
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
  /** Mean number of this side's DynamoDB requests in flight over the run (the probe keeps its own constant). */
  ddbMeanDepth: number;
  /** CPU this process used over the run, in cores (of the machine's 2: the rest is DynamoDB Local's). */
  processCores: number;
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
  const redeliveries: SQSRecord[] = [];
  const invoke = async (event: SQSEvent) => {
    const out = await handler(event, lambdaContext("bench-consumer", 900_000));
    failed += out.batchItemFailures.length;
    const ids = new Set(out.batchItemFailures.map((f) => (f as { itemIdentifier: string }).itemIdentifier));
    redeliveries.push(...event.Records.filter((r) => ids.has(r.messageId)));
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: o.invocations }, async () => {
      while (next < events.length) await invoke(events[next++]!);
    }),
  );
  // A record failed because another invocation held its key comes back, as SQS would bring it.
  for (let again = 0; again < 5 && redeliveries.length > 0; again++) {
    await sleep(again * 100);
    await invoke({ Records: redeliveries.splice(0) });
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await dropTable(table);
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
    ddbMeanDepth: round(count.depthMs / (seconds * 1000), 2),
    processCores: round((cpu.user + cpu.system) / 1e6 / seconds, 2),
    byCommand: count.byCommand,
  };
}

/** The table of Powertools' DynamoDBPersistenceLayer: its default key attribute, `id`. */
export async function powertoolsTable(client: DynamoDBClient, table: string) {
  await client.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
    }),
  );
}

/**
 * DynamoDB Local's JVM speeds up ~2.5× over its first ~20,000 requests: warm it before measuring,
 * on every request shape the two sides and their probes send (a path first met mid-run is
 * compiled mid-run, and the round that meets it pays for it).
 */
export async function warmUp(requests = 20_000): Promise<void> {
  const client = new DynamoDBClient({});
  await createDedupTable(client, "bench-warmup");
  const statements = (sql: string, parameters: (j: number) => string[]) =>
    new BatchExecuteStatementCommand({
      Statements: Array.from({ length: 25 }, (_, j) => ({
        Statement: sql,
        Parameters: parameters(j).map((S) => ({ S })),
      })),
    });
  const shapes = [
    // Ours: claims (PartiQL INSERTs of new keys), fenced completions, reads of known keys.
    (i: number) =>
      statements(
        `INSERT INTO "bench-warmup" VALUE {'pk': ?, 'status': 'IN_PROGRESS', 'leaseToken': ?, 'expiresAt': 9999999999}`,
        (j) => [`i${i}-${j}`, `t${i}`],
      ),
    (i: number) =>
      statements(
        `UPDATE "bench-warmup" SET "status" = 'COMPLETED' REMOVE "leaseExpiresAt" WHERE "pk" = ? AND "leaseToken" = ?`,
        // The claims sent ten requests earlier (the shape before this one): completions that land.
        (j) => [`i${i - 10}-${j}`, `t${i - 10}`],
      ),
    (i: number) =>
      new BatchGetItemCommand({
        RequestItems: {
          "bench-warmup": {
            Keys: Array.from({ length: 10 }, (_, j) => ({ pk: { S: `w${(i + j) % 5000}` } })),
            ConsistentRead: true,
          },
        },
      }),
    // Powertools': a conditional PutItem, then an UpdateItem.
    (i: number) =>
      new PutItemCommand({
        TableName: "bench-warmup",
        Item: { pk: { S: `w${i % 5000}` }, v: { N: String(i) } },
        ConditionExpression: i % 2 ? "attribute_not_exists(pk)" : undefined,
      }),
    (i: number) =>
      new UpdateItemCommand({
        TableName: "bench-warmup",
        Key: { pk: { S: `w${i % 5000}` } },
        UpdateExpression: "SET #v = :v",
        ExpressionAttributeNames: { "#v": "v" },
        ExpressionAttributeValues: { ":v": { N: String(i) } },
      }),
  ];
  let next = 0;
  await Promise.all(
    Array.from({ length: 40 }, async () => {
      while (next < requests) {
        const i = next++;
        // One in ten requests is a batch of ours (each shape in turn), the rest single-item writes.
        const shape = i % 10 === 0 ? shapes[(i / 10) % 3]! : shapes[3 + (i % 2)]!;
        await client.send(shape(i) as never).catch(() => undefined);
      }
    }),
  );
  client.destroy();
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
  // Each side runs between two runs of its ceiling probes on the same DynamoDB Local
  // (bench/ceilings.ts): the same writes, in the same shape and at the same concurrency, with no
  // consumer around them. Ours has a second one: the same writes in the shape of its Lambda
  // batches, the bound of any consumer that claims before its effects and completes after them.
  const inFlight = Math.ceil(o.batchSize / 25) * o.invocations;
  const keys = workload(o, arn, "probe").unique; // as many keys as each side writes
  const shapes = batchShapes(o);
  const rounds: Round[] = [];
  for (let r = -o.warmupRounds; r < o.rounds; r++) {
    const [a, ca] = await bracketed(() => runSide(ours, createDedupTable, o, arn, `ours-${r}`), {
      bare: (k) =>
        probed(createDedupTable, `probe-ours-${r}-${k}`, (c, t) => partiqlWriteCeiling(c, t, keys, inFlight)),
      shaped: (k) =>
        probed(createDedupTable, `shaped-ours-${r}-${k}`, (c, t) =>
          batchShapedCeiling(c, t, shapes, o.handlerMs, o.invocations),
        ),
    });
    const [b, cb] = await bracketed(() => runSide(theirs, powertoolsTable, o, arn, `pt-${r}`), {
      bare: (k) =>
        probed(powertoolsTable, `probe-pt-${r}-${k}`, (c, t) =>
          putItemWriteCeiling(c, t, keys, o.batchSize * o.invocations),
        ),
    });
    const paired: Round = {
      ours: a,
      powertools: b,
      ratio: a.msgsPerSec / b.msgsPerSec,
      ceilings: { ours: ca.bare, powertools: cb.bare, oursBatchShaped: ca.shaped },
      fractions: {
        ours: fractionOf(a.writeUnitsPerSec, ca.bare.perSec),
        powertools: fractionOf(b.writeUnitsPerSec, cb.bare.perSec),
        oursOfBatchShaped: fractionOf(a.writeUnitsPerSec, ca.shaped.perSec),
        batchShapedOfBare: fractionOf(ca.shaped.perSec, ca.bare.perSec),
      },
    };
    if (r >= 0) rounds.push(paired);
    const f = paired.fractions;
    console.error(
      `${r < 0 ? "warm-up round" : `round ${r + 1}`}: ours ${a.msgsPerSec} msg/s (${f.ours} of its ceiling, ${f.oursOfBatchShaped} of the batch-shaped bound), powertools ${b.msgsPerSec} msg/s (${f.powertools})`,
    );
  }
  return summarise(o, rounds);
}

/** A probe's figure, with its mean depth and this process's CPU, to set beside a side's. */
type ProbeFigure = CeilingFigure & { meanDepth: number; processCores: number };

async function probed(
  createTable: (client: DynamoDBClient, table: string) => Promise<void>,
  table: string,
  run: (client: DynamoDBClient, table: string) => Promise<CeilingFigure>,
): Promise<ProbeFigure> {
  await createTable(new DynamoDBClient({}), table);
  const client = new DynamoDBClient({});
  const count = countDynamoDb(client);
  const cpu0 = process.cpuUsage();
  try {
    const f = await run(client, table);
    const cpu = process.cpuUsage(cpu0);
    return {
      ...f,
      meanDepth: round(count.depthMs / f.ms, 2),
      processCores: round((cpu.user + cpu.system) / 1000 / f.ms, 2),
    };
  } finally {
    client.destroy();
    await dropTable(table);
  }
}

/** A run's table is dropped once measured: DynamoDB Local keeps every table in its heap, and a heap that grows round by round slows the later rounds. */
export async function dropTable(table: string): Promise<void> {
  const client = new DynamoDBClient({});
  await deleteTable(client, table);
  client.destroy();
}

/**
 * A side's run between two runs of each of its probes, against their means: DynamoDB Local's speed
 * drifts within a run (its JIT, its heap), and probes only after the side would credit the drift
 * to it. The probes run in order before the side and in reverse order after it.
 */
async function bracketed<K extends string>(
  side: () => Promise<SideResult>,
  probes: Record<K, (k: number) => Promise<ProbeFigure>>,
): Promise<[SideResult, Record<K, ProbeFigure>]> {
  const names = Object.keys(probes) as K[];
  const before = new Map<K, ProbeFigure>();
  for (const name of names) before.set(name, await probes[name](0));
  const result = await side();
  const after = new Map<K, ProbeFigure>();
  for (const name of [...names].reverse()) after.set(name, await probes[name](1));
  const figures = {} as Record<K, ProbeFigure>;
  for (const name of names) {
    const [x, y] = [before.get(name)!, after.get(name)!];
    const mean = (f: (p: ProbeFigure) => number) => round((f(x) + f(y)) / 2, 2);
    figures[name] = {
      perSec: Math.round(mean((p) => p.perSec)),
      units: x.units + y.units,
      ms: x.ms + y.ms,
      meanDepth: mean((p) => p.meanDepth),
      processCores: mean((p) => p.processCores),
    };
  }
  return [result, figures];
}

interface Round {
  ours: SideResult;
  powertools: SideResult;
  ratio: number;
  ceilings: { ours: ProbeFigure; powertools: ProbeFigure; oursBatchShaped: ProbeFigure };
  fractions: { ours: number; powertools: number; oursOfBatchShaped: number; batchShapedOfBare: number };
}

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
      ours: `conditional PartiQL writes (claim INSERT + fenced completion UPDATE), 25 per BatchExecuteStatement, ${Math.ceil(o.batchSize / 25) * o.invocations} in flight`,
      powertools: `a conditional PutItem then an UpdateItem per key, ${o.batchSize * o.invocations} in flight (the whole batch per invocation, as its processInParallel)`,
      oursWritesPerSec: medianOf(rounds, (r) => r.ceilings.ours.perSec).ceilings.ours.perSec,
      powertoolsWritesPerSec: medianOf(rounds, (r) => r.ceilings.powertools.perSec).ceilings.powertools
        .perSec,
    },
    // Where ours' rest goes: the batch shape's own share of the ceiling (claims before the effects,
    // completions before the answer, one batch at a time), and ours against that shape's bound.
    batchShaped: {
      ceiling: `the same writes per Lambda batch: claims and one read of known keys at once, each group's completions ${o.handlerMs} ms after its claims, the next batch after the last completion`,
      writesPerSec: medianOf(rounds, (r) => r.ceilings.oursBatchShaped.perSec).ceilings.oursBatchShaped
        .perSec,
      ofCeiling: medianOf(rounds, (r) => r.fractions.batchShapedOfBare).fractions.batchShapedOfBare,
      oursOfIt: medianOf(rounds, (r) => r.fractions.oursOfBatchShaped).fractions.oursOfBatchShaped,
    },
    roundFractions: rounds.map((r) => r.fractions),
    // Where the rest of the ceiling goes: the share of each side's median round with no DynamoDB
    // request of its own in flight (its handlers, the SQS calls, the consumer's own CPU).
    ddbBusyShare: {
      ours: medianOf(rounds, (r) => r.ours.msgsPerSec).ours.ddbBusyShare,
      powertools: medianOf(rounds, (r) => r.powertools.msgsPerSec).powertools.ddbBusyShare,
    },
    // Requests in flight on average, and this process's CPU in cores, for each side and its probe
    // (per round): depth the side does not keep, or CPU it takes from DynamoDB Local.
    depthAndCpu: rounds.map((r) => ({
      ours: [r.ours.ddbMeanDepth, r.ours.processCores],
      oursProbe: [r.ceilings.ours.meanDepth, r.ceilings.ours.processCores],
      powertools: [r.powertools.ddbMeanDepth, r.powertools.processCores],
      powertoolsProbe: [r.ceilings.powertools.meanDepth, r.ceilings.powertools.processCores],
    })),
  };
}
