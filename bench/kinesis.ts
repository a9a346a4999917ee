/**
 * Kinesis idempotency benchmark (issue 38): the same Kinesis batches (bench/kinesisWorkload.ts)
 * through our `kinesisConsumer` and through Powertools' `BatchProcessor(EventType.KinesisDataStreams)`
 * + `makeIdempotent` + `DynamoDBPersistenceLayer`, on the same DynamoDB Local, side by side in one
 * process, in alternating rounds. Both dedup on the order id in the record's data.
 *
 * Sides: ours per shard (`ordering: "shard"`, the default: one record after another) and per key
 * (`ordering: "key"`: partition keys side by side, each in order); Powertools sequential
 * (`processInParallel: false`, a shard's order kept) and in parallel (its default: every record of
 * the batch at once, no order). Then, once per side, a partial-batch resend: the n-th record's
 * first attempt fails, the side answers, and the batch is resent from the reported checkpoint as
 * Lambda does; counted: the records resent that had already run, and the effects that ran twice.
 *
 * Sizes: KINESIS_BENCH_BATCHES (20), KINESIS_BENCH_BATCH_SIZE (100), KINESIS_BENCH_HANDLER_MS (3),
 * KINESIS_BENCH_ROUNDS (5), KINESIS_BENCH_FAIL_AT (40).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { KinesisStreamEvent } from "aws-lambda";
import { kinesisConsumer } from "reliable-consumers/kinesis";
import { createSqsClient } from "reliable-consumers/sqs";
import { createDedupTable } from "../local/src/services/dynamodb/dedupTable.ts";
import { lambdaContext } from "../local/src/services/lambda/lambdaContext.ts";
import { countDynamoDb } from "./ddbCounter.ts";
import { medianOf, round } from "./figures.ts";
import {
  type Delivery,
  deliver,
  type KinesisHandler,
  kinesisRecord,
  kinesisWorkload,
  partitionKeyOf,
  sequenceNumber,
} from "./kinesisWorkload.ts";
import { type PowertoolsKinesisMode, powertoolsKinesisHandler } from "./peers.ts";
import { dropTable, powertoolsTable, type SqsBenchOptions } from "./sqsIdempotency.ts";

export interface KinesisBenchOptions extends SqsBenchOptions {
  /** The resend scenario: the record at this position of its batch (1-based) fails its first attempt. */
  failAt: number;
}

const sized = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

export const DEFAULT_KINESIS_BENCH: KinesisBenchOptions = {
  batches: sized("KINESIS_BENCH_BATCHES", 20),
  batchSize: sized("KINESIS_BENCH_BATCH_SIZE", 100), // Lambda's default for Kinesis
  duplicateRate: 0.1,
  handlerMs: sized("KINESIS_BENCH_HANDLER_MS", 3),
  rounds: sized("KINESIS_BENCH_ROUNDS", 5),
  warmupRounds: 1,
  invocations: 1, // one shard: Lambda runs one batch of a shard at a time
  failAt: sized("KINESIS_BENCH_FAIL_AT", 40),
};

/** The simulated effect of one record: `orderId` is its business key. */
type Work = (body: { orderId: string }, sequenceNumber: string) => Promise<void>;

interface Side {
  make: (client: DynamoDBClient, table: string, work: Work) => KinesisHandler;
  createTable: (client: DynamoDBClient, table: string) => Promise<void>;
}

const ours =
  (sqs: SQSClient, ordering: "shard" | "key"): Side["make"] =>
  (client, table, work) =>
    kinesisConsumer<{ orderId: string }>(async ({ body, sequenceNumber }) => work(body, sequenceNumber), {
      key: (b) => b.orderId,
      idempotency: { tableName: table },
      ordering,
      dynamodbClient: client,
      sqsClient: sqs,
    }) as unknown as KinesisHandler;

const powertools =
  (mode: PowertoolsKinesisMode): Side["make"] =>
  (client, table, work) =>
    powertoolsKinesisHandler(client, table, work, mode) as unknown as KinesisHandler;

const SIDE_NAMES = ["ours", "oursKey", "powertoolsSequential", "powertools"] as const;
type SideName = (typeof SIDE_NAMES)[number];

function sides(sqs: SQSClient): Record<SideName, Side> {
  return {
    ours: { make: ours(sqs, "shard"), createTable: createDedupTable },
    oursKey: { make: ours(sqs, "key"), createTable: createDedupTable },
    powertoolsSequential: { make: powertools("sequential"), createTable: powertoolsTable },
    powertools: { make: powertools("parallel"), createTable: powertoolsTable },
  };
}

/**
 * Effects per order and per record, and the effects that came before an earlier record of their
 * partition key; `failSeq`'s first attempt throws before its effect.
 */
function effectsOf(handlerMs: number, failSeq?: string) {
  const byOrder = new Map<string, number>();
  const bySeq = new Map<string, number>();
  const lastOfKey = new Map<string, bigint>();
  let inversions = 0;
  let failed = false;
  const work: Work = async ({ orderId }, seq) => {
    if (seq === failSeq && !failed) {
      failed = true;
      throw new Error("bench: this record's first attempt fails");
    }
    await sleep(handlerMs); // simulated I/O
    byOrder.set(orderId, (byOrder.get(orderId) ?? 0) + 1);
    bySeq.set(seq, (bySeq.get(seq) ?? 0) + 1);
    const key = partitionKeyOf(orderId);
    const last = lastOfKey.get(key);
    if (last !== undefined && BigInt(seq) < last) inversions++;
    else lastOfKey.set(key, BigInt(seq));
  };
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  return {
    work,
    bySeq,
    /** Effects beyond one per order. */
    duplicateEffects: () => total(byOrder) - byOrder.size,
    /** Records whose effect ran more than once. */
    ranTwice: () => [...bySeq.values()].filter((n) => n > 1).length,
    applied: () => total(byOrder),
    /** Effects that ran after a later record of the same partition key: its order not kept. */
    inversions: () => inversions,
  };
}

/** A side's table for one run, and a counted DynamoDB client for its handler. */
async function tableFor(side: Side, tag: string) {
  const table = `bench-kinesis-${tag}`;
  const admin = new DynamoDBClient({});
  await side.createTable(admin, table);
  admin.destroy();
  const client = new DynamoDBClient({});
  return { table, client, count: countDynamoDb(client) };
}

export interface KinesisSideResult {
  recordsPerSec: number;
  records: number;
  newRecords: number;
  effects: number;
  duplicateEffects: number;
  /** Effects that ran after a later record of their partition key (the order Kinesis gave not kept). */
  orderInversions: number;
  /** Sequence numbers the side reported in its partial batch responses. */
  failedRecords: number;
  /** Invocations that threw (Lambda retries the whole batch). */
  thrownInvocations: number;
  /** Records Lambda would have sent again from a checkpoint. */
  resentRecords: number;
  ddbRequests: number;
  ddbRequestsPerNewRecord: number;
  writeUnitsPerNewRecord: number;
  readUnitsPerNewRecord: number;
  /** CPU this process used over the run, in cores (of the machine's 2: the rest is DynamoDB Local's). */
  processCores: number;
  byCommand: Record<string, number>;
}

/** One side's run of the whole workload, each batch delivered as Lambda's mapping would. */
async function runSide(side: Side, o: KinesisBenchOptions, tag: string): Promise<KinesisSideResult> {
  const { table, client, count } = await tableFor(side, tag);
  const effects = effectsOf(o.handlerMs);
  const handler = side.make(client, table, effects.work);
  const { events, unique } = kinesisWorkload(o);
  const tally: Delivery = { reported: 0, resent: 0, thrown: 0 };
  const context = lambdaContext("bench-consumer", 900_000);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const event of events) await deliver(handler, event, context, tally);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  client.destroy();
  await dropTable(table);
  const records = o.batches * o.batchSize;
  return {
    recordsPerSec: Math.round(records / seconds),
    records,
    newRecords: unique,
    effects: effects.applied(),
    duplicateEffects: effects.duplicateEffects(),
    orderInversions: effects.inversions(),
    failedRecords: tally.reported,
    thrownInvocations: tally.thrown,
    resentRecords: tally.resent,
    ddbRequests: count.requests,
    ddbRequestsPerNewRecord: round(count.requests / unique, 3),
    writeUnitsPerNewRecord: round(count.writeUnits / unique, 3),
    readUnitsPerNewRecord: round(count.readUnits / unique, 3),
    processCores: round((cpu.user + cpu.system) / 1e6 / seconds, 2),
    byCommand: count.byCommand,
  };
}

export interface ResendResult {
  /** Positions (1-based) of the sequence numbers the first answer reported. */
  firstAnswer: number[];
  /** Records in the resend from the checkpoint. */
  resentRecords: number;
  /** Of those, records whose effect had already run before the resend. */
  resentAlreadyDone: number;
  /** Records whose effect ran twice. */
  ranTwice: number;
  duplicateEffects: number;
  /** Invocations until the batch was answered with nothing to resend. */
  invocations: number;
  /** DynamoDB requests of the invocations after the first. */
  ddbRequestsOfResends: number;
}

/**
 * One batch of distinct orders whose `failAt`-th record fails its first attempt, delivered as
 * Lambda does: the answer, then the resend from the lowest reported sequence number.
 */
async function runResend(side: Side, o: KinesisBenchOptions, tag: string): Promise<ResendResult> {
  const { table, client, count } = await tableFor(side, tag);
  const effects = effectsOf(o.handlerMs, sequenceNumber(o.failAt));
  const inner = side.make(client, table, effects.work);
  const event: KinesisStreamEvent = {
    Records: Array.from({ length: o.batchSize }, (_, i) =>
      kinesisRecord(i + 1, { orderId: `resend-${i + 1}` }),
    ),
  };
  const position = (seq: string | undefined) => Number(BigInt(seq ?? "0") - BigInt(sequenceNumber(0)));
  const result: ResendResult = {
    firstAnswer: [],
    resentRecords: 0,
    resentAlreadyDone: 0,
    ranTwice: 0,
    duplicateEffects: 0,
    invocations: 0,
    ddbRequestsOfResends: 0,
  };
  let requestsAfterFirst = 0;
  const handler: KinesisHandler = async (e, context) => {
    result.invocations++;
    if (result.invocations === 2) {
      result.resentAlreadyDone = e.Records.filter((r) => effects.bySeq.has(r.kinesis.sequenceNumber)).length;
      requestsAfterFirst = count.requests;
    }
    const out = await inner(e, context);
    if (result.invocations === 1)
      result.firstAnswer = out.batchItemFailures.map((f) => position(f.itemIdentifier));
    return out;
  };
  const tally: Delivery = { reported: 0, resent: 0, thrown: 0 };
  await deliver(handler, event, lambdaContext("bench-consumer", 900_000), tally);
  client.destroy();
  await dropTable(table);
  result.resentRecords = tally.resent;
  result.ranTwice = effects.ranTwice();
  result.duplicateEffects = effects.duplicateEffects();
  result.ddbRequestsOfResends = result.invocations > 1 ? count.requests - requestsAfterFirst : 0;
  return result;
}

type Round = Record<SideName, KinesisSideResult>;

/** Every side once per round, in an order that turns each round so drift hits all sides alike. */
export async function runKinesisBench(o: KinesisBenchOptions = DEFAULT_KINESIS_BENCH) {
  const sqs = createSqsClient();
  const all = sides(sqs);
  const rounds: Round[] = [];
  for (let r = -o.warmupRounds; r < o.rounds; r++) {
    const turn = (r + o.warmupRounds) % SIDE_NAMES.length;
    const order = [...SIDE_NAMES.slice(turn), ...SIDE_NAMES.slice(0, turn)];
    const figures = {} as Round;
    for (const name of order) figures[name] = await runSide(all[name], o, `${name}-${r + o.warmupRounds}`);
    if (r >= 0) rounds.push(figures);
    console.error(
      `kinesis ${r < 0 ? "warm-up round" : `round ${r + 1}`}: ${SIDE_NAMES.map((n) => `${n} ${figures[n].recordsPerSec} rec/s`).join(", ")}`,
    );
  }
  const resend = {} as Record<SideName, ResendResult>;
  for (const name of SIDE_NAMES) resend[name] = await runResend(all[name], o, `resend-${name}`);
  sqs.destroy();
  return summarise(o, rounds, resend);
}

/** Each side's median round, the median paired ratios, and the resend scenario's counts. */
function summarise(o: KinesisBenchOptions, rounds: Round[], resend: Record<SideName, ResendResult>) {
  // The median of the paired rounds' ratios (robust to a noisy round).
  const ratio = (a: SideName, b: SideName) => {
    const m = medianOf(rounds, (r) => r[a].recordsPerSec / r[b].recordsPerSec);
    return round(m[a].recordsPerSec / m[b].recordsPerSec, 2);
  };
  const sidesFigures = Object.fromEntries(
    SIDE_NAMES.map((n) => [n, medianOf(rounds, (r) => r[n].recordsPerSec)[n]]),
  ) as Record<SideName, KinesisSideResult>;
  return {
    workload: o,
    ...sidesFigures,
    ratios: {
      // Both keep a shard's order: ours one record after another, Powertools' sequential mode.
      oursOverPowertoolsSequential: ratio("ours", "powertoolsSequential"),
      // Both run a batch's records side by side: ours by partition key (each key in order), Powertools' default all at once.
      oursKeyOverPowertools: ratio("oursKey", "powertools"),
      // Ours per key against ours per shard, with a handler of `handlerMs`.
      keyOverShard: ratio("oursKey", "ours"),
    },
    roundRates: rounds.map((r) => Object.fromEntries(SIDE_NAMES.map((n) => [n, r[n].recordsPerSec]))),
    resend,
  };
}
