/**
 * Kafka consumer benchmark: one 1,000-record MSK event, 10 partitions, 100 keys (each key on one
 * partition, as Kafka's partitioner places it), a handler doing ~2 ms of I/O. Side by side, in one
 * process:
 *
 * - `powertoolsLoop`: Powertools' `kafkaConsumer` (deserialisation) with a plain `for` loop over the
 *   records: what a Powertools user writes today (Powertools TS has no Kafka batch processor).
 * - `partitionSequential`: ours, default mode: partitions side by side, each in offset order.
 * - `keyParallel`: ours, `ordering: "key"`: keys side by side, each key in offset order.
 * - `keyParallelIdempotent`: the same with the DynamoDB dedup store on (claim + grouped completions).
 *
 * Every variant checks that each record ran once and each key ran in offset order.
 * Run alone: `npx tsx bench/kafka.ts` (starts its own emulators unless the AWS_ENDPOINT_URL_* /
 * KAFKA_BROKERS variables point at running ones). `npm run bench` runs it after the SQS benchmark.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { KafkaRecordHandler, MskEventJson, MskRecordJson } from "reliable-consumers/kafka";
import { type Emulators, startEmulators } from "reliable-consumers-local";
import { createKafkaBatchProcessor } from "../lib/kafka/kafkaBatchProcessor.ts";
import { createDedupTable, deleteTable } from "../local/src/services/dynamodb/dedupTable.ts";
import { countDynamoDb } from "./ddbCounter.ts";
import { benchContext, noProducer, quietTelemetry } from "./kafkaStubs.ts";

const RECORDS = 1_000;
const PARTITIONS = 10;
const KEYS = 100;
const IO_MS = 2;
const ROUNDS = 3;

const context = benchContext("bench-kafka");

function benchEvent(round: number): MskEventJson {
  const records: Record<string, MskRecordJson[]> = {};
  const nextOffset = new Array(PARTITIONS).fill(0);
  for (let i = 0; i < RECORDS; i++) {
    const key = i % KEYS;
    const partition = key % PARTITIONS;
    const list = records[`bench-orders-${partition}`] ?? [];
    const offset = nextOffset[partition]++;
    list.push({
      topic: "bench-orders",
      partition,
      offset,
      timestamp: Date.now(),
      timestampType: "CREATE_TIME",
      key: Buffer.from(`key-${key}`).toString("base64"),
      value: Buffer.from(JSON.stringify({ orderId: `r${round}-o${i}`, key, seq: i })).toString("base64"),
      headers: [{ "message-id": [...Buffer.from(`r${round}-m${i}`)] }],
    });
    records[`bench-orders-${partition}`] = list;
  }
  return { eventSource: "aws:kafka", records };
}

/** The 2 ms of I/O, plus the bookkeeping that checks exactly-once and per-key order. */
function workload() {
  const seen = new Map<number, number>();
  let duplicates = 0;
  let orderViolations = 0;
  return {
    async handle(key: number, seq: number) {
      const last = seen.get(key) ?? -1;
      if (seq <= last) {
        if (seq === last) duplicates++;
        else orderViolations++;
      }
      seen.set(key, Math.max(last, seq));
      await sleep(IO_MS);
    },
    reset() {
      seen.clear();
    },
    get checks() {
      return { duplicates, orderViolations };
    },
  };
}

interface VariantResult {
  recordsPerSec: number;
  msPerBatch: number;
  duplicates: number;
  orderViolations: number;
  [extra: string]: unknown;
}

async function measure(
  run: (event: MskEventJson) => Promise<unknown>,
  work: ReturnType<typeof workload>,
  roundBase: number,
): Promise<VariantResult> {
  await run(benchEvent(roundBase)); // warm-up round (JIT, connections)
  const times: number[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const event = benchEvent(roundBase + r);
    work.reset();
    const start = performance.now();
    await run(event);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  return {
    recordsPerSec: Math.round((RECORDS / median) * 1000),
    msPerBatch: Math.round(median),
    ...work.checks,
  };
}

export async function runKafkaBench(): Promise<Record<string, unknown>> {
  let emulators: Emulators | undefined;
  if (!process.env.AWS_ENDPOINT_URL_DYNAMODB && !process.env.AWS_ENDPOINT_URL) {
    emulators = await startEmulators({ fullJit: true });
    // DynamoDB Local's JVM gets ~2.5x faster over its first ~20,000 requests (npm run bench does this once).
    const { warmUp } = await import("./sqsIdempotency.ts");
    await warmUp();
  }
  process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
  process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
  const ddb = new DynamoDBClient({});
  const count = countDynamoDb(ddb);
  const table = `bench-kafka-dedup-${Date.now()}`;
  await createDedupTable(ddb, table);
  try {
    type Body = { key: number; seq: number };

    // Powertools: kafkaConsumer deserialises; the user loops.
    const { kafkaConsumer } = await import("@aws-lambda-powertools/kafka");
    const ptWork = workload();
    const powertools = kafkaConsumer<string, Body>(
      async (event) => {
        for (const record of event.records) await ptWork.handle(record.value.key, record.value.seq);
      },
      { value: { type: "json" } },
    );
    const powertoolsLoop = await measure(
      (e) => powertools(e as unknown as Parameters<typeof powertools>[0], context),
      ptWork,
      100,
    );

    const ours = async (
      options: {
        ordering: "partition" | "key";
        concurrency: number;
        idempotent: boolean;
        claims?: { maxBatch?: number; maxDelayMs?: number };
      },
      roundBase: number,
    ) => {
      const work = workload();
      const handler: KafkaRecordHandler<Body> = ({ body }) => work.handle(body.key, body.seq);
      const process = createKafkaBatchProcessor(handler, {
        ordering: options.ordering,
        concurrency: options.concurrency,
        idempotency: options.idempotent
          ? {
              tableName: table,
              scope: `bench-${roundBase}`,
              ...(options.claims ? { claims: options.claims } : {}),
            }
          : false,
        producer: noProducer,
        dynamodbClient: ddb,
        telemetry: quietTelemetry,
      });
      const before = count.requests;
      const result = await measure(
        async (e) => {
          const response = await process(e, context);
          if (response.batchItemFailures.length > 0) {
            throw new Error(`bench: ${response.batchItemFailures.length} partitions reported unfinished`);
          }
        },
        work,
        roundBase,
      );
      const requests = count.requests - before;
      return {
        ...result,
        concurrency: options.concurrency,
        ...(options.idempotent
          ? {
              ddbRequestsPerNewMessage: Number((requests / ((ROUNDS + 1) * RECORDS)).toFixed(3)),
              byCommand: { ...count.byCommand },
            }
          : {}),
      };
    };

    const partitionSequential = await ours(
      { ordering: "partition", concurrency: PARTITIONS, idempotent: false },
      200,
    );
    const keyParallel = await ours({ ordering: "key", concurrency: KEYS, idempotent: false }, 300);
    // 40 in flight: under the SDK's 50 sockets, so DynamoDB requests do not queue in the client.
    const keyParallelIdempotent = await ours({ ordering: "key", concurrency: 40, idempotent: true }, 400);

    const ratio = (a: VariantResult) => Number((a.recordsPerSec / powertoolsLoop.recordsPerSec).toFixed(2));
    return {
      workload: { records: RECORDS, partitions: PARTITIONS, keys: KEYS, handlerIoMs: IO_MS, rounds: ROUNDS },
      powertoolsLoop,
      partitionSequential,
      keyParallel,
      keyParallelIdempotent,
      ratio: {
        partitionSequentialVsPowertools: ratio(partitionSequential),
        keyParallelVsPowertools: ratio(keyParallel),
        keyParallelIdempotentVsPowertools: ratio(keyParallelIdempotent),
      },
    };
  } finally {
    await deleteTable(ddb, table).catch(() => {});
    ddb.destroy();
    await emulators?.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runKafkaBench();
  console.log(`BENCH_KAFKA ${JSON.stringify(result)}`);
}
