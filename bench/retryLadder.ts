/**
 * Retry ladder delay accuracy: how late a record on a retry topic is processed compared with when
 * it was due. N records fail on the main topic and on the first rung, climb `.retry.1s` and
 * `.retry.3s`, and each rung's consumer (the local event source mapping and our Kafka consumer, as
 * on Lambda) processes each record when it comes due. Per rung, p50/p95/max ms of:
 * - `late`: processing start − (the record's timestamp on the rung, i.e. when it was routed there,
 *   + the rung's delay): the gate's own accuracy; negative would be early;
 * - `lateFromFailure`: processing start − (the failure that sent it there + the delay), so routing
 *   time counts against us too; only for records that failed themselves. A record of a key whose
 *   earlier record is on the ladder follows it to its rung without running (`keyOrder`, on by
 *   default), so it has no failure of its own there; those are counted as `followed`.
 *
 * Run by `npm run bench -- --only ladder [--kafka real|mock|both]` against the emulators in
 * process.env (KAFKA_BROKERS); `LADDER_BENCH_RECORDS` sets the size (default 200).
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { Kafka, logLevel } from "kafkajs";
import { TransientError } from "reliable-consumers";
import {
  createRetryLadder,
  disconnectAllKafkaProducers,
  getKafkaProducer,
  kafkaConsumer,
} from "reliable-consumers/kafka";
import { startLocalKafkaTrigger } from "reliable-consumers-local";
import { ladderTopics } from "../lib/kafka/retryLadder.ts";
import { createDeclaredTopics } from "../local/src/services/kafka/topics.ts";

const DELAYS = ["1s", "3s"] as const;

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

export async function runRetryLadderBench(): Promise<Record<string, unknown>> {
  const records = Number(process.env.LADDER_BENCH_RECORDS ?? 200);
  const run = Date.now().toString(36);
  const topic = `bench-ladder-${run}`;
  const ladder = createRetryLadder({ delays: [...DELAYS] });
  const { retry, deadLetter } = ladderTopics(ladder, topic);
  const brokers = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
  const admin = new Kafka({ clientId: "bench-ladder", brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await createDeclaredTopics(
    admin,
    [topic, ...retry, deadLetter].map((name) => ({ name, partitions: 4 })),
  ).finally(() => admin.disconnect());

  // Each record fails on every attempt but the last rung's, so it visits each rung once.
  const lateness: Record<string, number[]> = Object.fromEntries(DELAYS.map((d) => [d, []]));
  const latenessFromFailure: Record<string, number[]> = Object.fromEntries(DELAYS.map((d) => [d, []]));
  let done = 0;
  let finished: () => void = () => {};
  const allDone = new Promise<void>((r) => {
    finished = r;
  });
  // Due time: when the attempt before failed (the record is routed right after) plus the rung's
  // delay. Measured from the failure, so routing time counts against us, never for us.
  const failedAt = new Map<string, number>();
  const handler = kafkaConsumer<{ n: number }>(
    async (env, { record }) => {
      const now = Date.now();
      if (env.attempt > 1) {
        const rung = DELAYS[env.attempt - 2]!;
        const delayMs = ladder.delaysMs[env.attempt - 2]!;
        lateness[rung]!.push(now - (record.timestamp + delayMs));
        const failed = failedAt.get(`${env.id}#${env.attempt - 1}`);
        if (failed !== undefined) latenessFromFailure[rung]!.push(now - (failed + delayMs));
      }
      if (env.attempt <= DELAYS.length) {
        failedAt.set(`${env.id}#${env.attempt}`, Date.now());
        throw new TransientError("bench: retry me");
      }
      if (++done === records) finished();
    },
    {
      consumer: "bench-ladder",
      retry: ladder,
      idempotency: false,
      dynamodbClient: new DynamoDBClient({}),
    },
  );
  const triggers = await Promise.all(
    [topic, ...retry].map((t) =>
      startLocalKafkaTrigger({ topic: t, groupId: `bench-ladder-${run}-${t}`, handler, timeoutMs: 60_000 }),
    ),
  );
  try {
    const producer = getKafkaProducer();
    for (let i = 0; i < records; i += 50) {
      await producer.send(
        topic,
        Array.from({ length: Math.min(50, records - i) }, (_, j) => ({
          key: `k${(i + j) % 16}`,
          value: JSON.stringify({ n: i + j }),
          headers: { "message-id": `m-${i + j}` },
        })),
      );
    }
    const timeout = setTimeout(() => finished(), 120_000 + records * 50);
    await allDone;
    clearTimeout(timeout);
  } finally {
    await Promise.all(triggers.map((t) => t.stop()));
    await disconnectAllKafkaProducers();
  }
  const stats = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return {
      records: sorted.length,
      earliestMs: sorted[0] ?? 0,
      p50Ms: quantile(sorted, 0.5),
      p95Ms: quantile(sorted, 0.95),
      maxMs: sorted.at(-1) ?? 0,
    };
  };
  const perRung = Object.fromEntries(
    DELAYS.map((rung) => [
      rung,
      {
        late: stats(lateness[rung]!),
        lateFromFailure: stats(latenessFromFailure[rung]!),
        followed: lateness[rung]!.length - latenessFromFailure[rung]!.length,
      },
    ]),
  );
  return { records, completed: done, rungs: perRung };
}
