/**
 * Avro decoding benchmark: one MSK event of 1,000 Avro records (10 partitions), registry-framed
 * (Confluent wire format: magic byte, schema id), a handler that only checks what it got. Side by
 * side in one process, with the same schema:
 *
 * - `ours`: `createKafkaBatchProcessor` with `parse: avro({ registry: confluentRegistry(...) })`:
 *   the writer schema is fetched from the registry by the id in the framing, once per container,
 *   and decoded with a cached avsc type. Dedup off (this measures decoding, not DynamoDB).
 * - `powertools`: Powertools' `kafkaConsumer` with `{ value: { type: "avro", schema } }`. It has no
 *   registry client and does not read the framing, so it gets what the MSK trigger hands over with
 *   `eventRecordFormat: SOURCE` (the framing stripped) and the schema bundled; its registry fetches
 *   are 0 by construction.
 *
 * Registry fetches are counted at the registry (the stand-in of test/support, on 127.0.0.1).
 * `npm run bench -- --only avro`, or alone: `npx tsx bench/avro.ts` (`BENCH_AVRO_RECORDS` sets the
 * size, for a quick check). Figures go to bench/README.md only from a run on a quiet machine.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { MskEventJson, MskRecordJson } from "reliable-consumers/kafka";
import { avro, avroEncoder, confluentRegistry } from "reliable-consumers/kafka";
import { createKafkaBatchProcessor } from "../lib/kafka/kafkaBatchProcessor.ts";
import { startConfluentStandIn } from "../test/support/confluentRegistryStandIn.ts";
import { benchContext, noProducer, quietTelemetry } from "./kafkaStubs.ts";

const RECORDS = Number(process.env.BENCH_AVRO_RECORDS ?? 1_000);
const PARTITIONS = 10;
const ROUNDS = 5;

const SCHEMA = {
  type: "record",
  name: "Order",
  namespace: "bench",
  fields: [
    { name: "orderId", type: "string" },
    { name: "customerId", type: "string" },
    { name: "amountCents", type: "long" },
    { name: "currency", type: "string" },
    {
      name: "lines",
      type: {
        type: "array",
        items: {
          type: "record",
          name: "Line",
          fields: [
            { name: "sku", type: "string" },
            { name: "qty", type: "int" },
          ],
        },
      },
    },
  ],
};
type Order = { orderId: string; amountCents: number; lines: unknown[] };

const context = benchContext("bench-avro");

function eventOf(values: Buffer[], round: number): MskEventJson {
  const records: Record<string, MskRecordJson[]> = {};
  values.forEach((value, i) => {
    const partition = i % PARTITIONS;
    const list = records[`bench-avro-${partition}`] ?? [];
    records[`bench-avro-${partition}`] = list;
    list.push({
      topic: "bench-avro",
      partition,
      offset: round * RECORDS + list.length,
      timestamp: Date.now(),
      timestampType: "CREATE_TIME",
      key: Buffer.from(`k${i}`).toString("base64"),
      value: value.toString("base64"),
      headers: [],
    });
  });
  return { eventSource: "aws:kafka", records };
}

async function measure(
  run: (round: number) => Promise<number>,
): Promise<{ recordsPerSec: number; msPerBatch: number }> {
  if ((await run(0)) !== RECORDS) throw new Error("bench: warm-up round did not see every record");
  const times: number[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const start = performance.now();
    const seen = await run(r);
    times.push(performance.now() - start);
    if (seen !== RECORDS) throw new Error(`bench: round ${r} saw ${seen} of ${RECORDS} records`);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  return { recordsPerSec: Math.round((RECORDS / median) * 1000), msPerBatch: Math.round(median * 10) / 10 };
}

export async function runAvroBench(): Promise<Record<string, unknown>> {
  process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
  process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
  const registry = await startConfluentStandIn();
  try {
    const client = confluentRegistry({ url: registry.url });
    const encoder = avroEncoder({
      registry: client,
      subject: "bench-avro-value",
      schema: SCHEMA,
      register: true,
    });
    const framed = await Promise.all(
      Array.from({ length: RECORDS }, (_, i) =>
        encoder.encode({
          orderId: `o-${i}`,
          customerId: `c-${i % 97}`,
          amountCents: 1000 + i,
          currency: "EUR",
          lines: [
            { sku: `s-${i % 13}`, qty: 1 + (i % 3) },
            { sku: "s-x", qty: 2 },
          ],
        }),
      ),
    );
    const source = framed.map((b) => b.subarray(5)); // what SOURCE hands over: no framing
    const fetchesBefore = registry.requests.filter((r) => r.startsWith("GET /schemas/ids/")).length;

    // Ours: a fresh decoder (a cold container) fetches the writer schema itself.
    let oursSeen = 0;
    const ours = createKafkaBatchProcessor<Order>(
      async (env) => {
        if (env.body.lines.length === 2 && env.body.amountCents >= 1000) oursSeen++;
      },
      {
        consumer: "bench-avro",
        idempotency: false,
        parse: avro({ registry: confluentRegistry({ url: registry.url }) }),
        lambdaSchemaRegistry: false,
        producer: noProducer,
        dynamodbClient: new DynamoDBClient({}),
        telemetry: quietTelemetry,
      },
    );
    const oursResult = await measure(async (round) => {
      oursSeen = 0;
      const response = await ours(eventOf(framed, round), context);
      if (response.batchItemFailures.length > 0) throw new Error("bench: ours reported failures");
      return oursSeen;
    });
    const oursFetches =
      registry.requests.filter((r) => r.startsWith("GET /schemas/ids/")).length - fetchesBefore;

    const { kafkaConsumer } = await import("@aws-lambda-powertools/kafka");
    let ptSeen = 0;
    const powertools = kafkaConsumer<string, Order>(
      async (event) => {
        for (const record of event.records) {
          if (record.value.lines.length === 2 && Number(record.value.amountCents) >= 1000) ptSeen++;
        }
      },
      { value: { type: "avro", schema: JSON.stringify(SCHEMA) } },
    );
    const ptResult = await measure(async (round) => {
      ptSeen = 0;
      await powertools(eventOf(source, round) as unknown as Parameters<typeof powertools>[0], context);
      return ptSeen;
    });

    return {
      records: RECORDS,
      partitions: PARTITIONS,
      rounds: ROUNDS,
      ours: {
        ...oursResult,
        registryFetches: oursFetches,
        input: "Confluent-framed (magic byte + schema id)",
      },
      powertools: { ...ptResult, registryFetches: 0, input: "framing stripped (SOURCE), schema bundled" },
      ratio: Math.round((oursResult.recordsPerSec / ptResult.recordsPerSec) * 100) / 100,
    };
  } finally {
    await registry.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runAvroBench();
  console.log(`BENCH_AVRO ${JSON.stringify(result)}`);
}
