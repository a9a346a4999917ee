/**
 * The Kafka consumer variants fed by a broker instead of a synthetic event (bench/kafka.ts measures
 * the processor alone): N records on a 10-partition topic, 100 keys, consumed through the local
 * event source mapping (fetch, MSK event, our consumer, commit) with a ~2 ms handler, once per
 * ordering mode. Records/s from the first record processed to the last, so the group join (~9 s
 * on the mock, ~0 on Kafka) is not counted; reported separately as `joinMs`.
 *
 * Run by `npm run bench -- --only kafka [--kafka real|mock|both]` against KAFKA_BROKERS;
 * `KAFKA_BENCH_RECORDS` sets the size (default 5,000).
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  disconnectAllKafkaProducers,
  getKafkaProducer,
  kafkaConfigFromEnv,
  kafkaConsumer,
} from "reliable-consumers/kafka";
import { startLocalKafkaTrigger } from "reliable-consumers-local";
import { createDeclaredTopicsOn } from "../local/src/services/kafka/topics.ts";

const PARTITIONS = 10;
const KEYS = 100;
const IO_MS = 2;

async function variant(ordering: "partition" | "key", records: number, run: string) {
  const topic = `bench-kafka-${ordering}-${run}`;
  await createDeclaredTopicsOn(kafkaConfigFromEnv().brokers, [{ name: topic, partitions: PARTITIONS }]);
  const producer = getKafkaProducer();
  for (let i = 0; i < records; i += 500) {
    await producer.send(
      topic,
      Array.from({ length: Math.min(500, records - i) }, (_, j) => ({
        key: `key-${(i + j) % KEYS}`,
        value: JSON.stringify({ seq: i + j }),
        headers: { "message-id": `${run}-${i + j}` },
      })),
    );
  }
  const lastSeq = new Map<string, number>();
  let outOfOrder = 0;
  let processed = 0;
  let first = 0;
  let last = 0;
  const started = Date.now();
  const handler = kafkaConsumer<{ seq: number }>(
    async (env) => {
      first ||= Date.now();
      await sleep(IO_MS);
      if ((lastSeq.get(env.key ?? "") ?? -1) > env.body.seq) outOfOrder++;
      lastSeq.set(env.key ?? "", env.body.seq);
      processed++;
      last = Date.now();
    },
    { consumer: "bench-kafka", idempotency: false, ordering, concurrency: 50 },
  );
  const trigger = await startLocalKafkaTrigger({ topic, groupId: `${topic}-g`, handler, batchSize: 500 });
  const deadline = Date.now() + 120_000 + records * 20;
  while (processed < records && Date.now() < deadline) await sleep(50);
  await trigger.stop();
  const seconds = Math.max(0.001, (last - first) / 1000);
  return {
    records,
    processed,
    outOfOrder,
    joinMs: first - started,
    recordsPerSec: Math.round(processed / seconds),
  };
}

export async function runKafkaFromTopicBench(): Promise<Record<string, unknown>> {
  const records = Number(process.env.KAFKA_BENCH_RECORDS ?? 5_000);
  const run = Date.now().toString(36);
  try {
    return {
      workload: `${records} records on ${PARTITIONS} partitions, ${KEYS} keys, ${IO_MS} ms handler, through the local event source mapping`,
      partitionSequential: await variant("partition", records, run),
      keyParallel: await variant("key", records, run),
    };
  } finally {
    await disconnectAllKafkaProducers();
  }
}
