/**
 * `npm run bench`: starts its own emulators, warms DynamoDB Local up, runs every benchmark side by
 * side with its peer, and prints `BENCH {json}` as the last line.
 *
 *   npm run bench -- --only sqs,kafka,outbox,ladder   # a subset (also: gateway, avro, coldstart)
 *   npm run bench -- --only sqs                         # idempotent SQS, one and two invocations at once
 *   npm run bench -- --only kinesis                     # idempotent Kinesis: ours vs Powertools, per key vs per shard
 *   npm run bench -- --kafka both                      # Kafka benchmarks on the mock and on real brokers (default)
 *   npm run bench -- --kafka real                      # only on a 3-broker Apache Kafka (RF 3, min ISR 2)
 *   npm run bench -- --only ladder --no-warmup         # a quick check (sizes: *_BENCH_* variables)
 *
 * The Kafka-bound benchmarks (consumer variants fed from a topic, the outbox relay to Kafka, the
 * retry ladder's delay accuracy) run once per Kafka substrate, their figures side by side under
 * `kafkaSubstrates.<mock|real>`; the real brokers run with the full JIT, as in production.
 */
import { existsSync } from "node:fs";
import { type KafkaSubstrate, startEmulators } from "reliable-consumers-local";
import { startLocalKafka } from "../local/src/emulators.ts";
import { DEFAULT_SQS_BENCH, runSqsBench, warmUp } from "./sqsIdempotency.ts";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}
const only = arg("only") ? new Set((arg("only") ?? "").split(",")) : undefined;
const wanted = (key: string) => !only || only.has(key);
const kafkaArg = arg("kafka") ?? "both";
if (!["mock", "real", "both"].includes(kafkaArg))
  throw new Error(`--kafka takes mock, real or both, got ${kafkaArg}`);
const substrates: KafkaSubstrate[] = kafkaArg === "both" ? ["mock", "real"] : [kafkaArg as KafkaSubstrate];

// Cold start needs no emulators: measured first, on a machine not yet busy with DynamoDB Local.
const coldStartRunsArg = process.argv.indexOf("--coldstart-runs");
const coldStart = wanted("coldstart")
  ? await (await import("./coldStart.ts")).runColdStartBench(
      coldStartRunsArg > 0 ? Number(process.argv[coldStartRunsArg + 1]) : 7,
    )
  : undefined;
if (only && [...only].every((k) => k === "coldstart")) {
  console.log(`BENCH ${JSON.stringify({ coldStart })}`);
  process.exit(0);
}

const emulators = await startEmulators({ kafka: "mock", fullJit: true });
process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
process.env.POWERTOOLS_IDEMPOTENCY_DISABLED = "false";
try {
  // DynamoDB-bound benchmarks need DynamoDB Local warm (see bench/README); `--no-warmup` for a quick check.
  if (
    !process.argv.includes("--no-warmup") &&
    ["sqs", "kinesis", "kafka", "outbox", "gateway"].some(wanted)
  ) {
    console.error("warming DynamoDB Local up (20,000 requests)...");
    await warmUp();
  }
  const results: Record<string, unknown> = {};
  if (wanted("sqs")) results.sqs = await runSqsBench();
  // The same with two invocations in flight in one process (Lambda Managed Instances; or an event
  // source mapping at concurrency 2): the consumers' container-scope state shared, and a batch's
  // lulls (its handlers' work, its tail) filled by the other's requests.
  if (wanted("sqs")) results.sqsTwoInvocations = await runSqsBench({ ...DEFAULT_SQS_BENCH, invocations: 2 });
  // Idempotent Kinesis against Powertools' Kinesis batch processor, and a partial-batch resend.
  if (wanted("kinesis")) results.kinesis = await (await import("./kinesis.ts")).runKinesisBench();
  // The enforcing gateway of the local runtime (issue 21): the same consumer, on and off.
  if (wanted("gateway"))
    results.gateway = await (await import("./gatewayOverhead.ts")).runGatewayOverheadBench();
  // The consumer processor alone, on synthetic MSK events (no broker in the loop).
  if (wanted("kafka") && existsSync(new URL("./kafka.ts", import.meta.url))) {
    const { runKafkaBench } = await import("./kafka.ts");
    results.kafka = await runKafkaBench();
  }
  // Benchmarks with a broker in the loop, once per Kafka substrate.
  const bound: [string, () => Promise<unknown>][] = [
    ["kafka", async () => (await import("./kafkaFromTopic.ts")).runKafkaFromTopicBench()],
    ["outbox", async () => (await import("./outbox.ts")).runOutboxBench(["kafka"])],
    ["ladder", async () => (await import("./retryLadder.ts")).runRetryLadderBench()],
  ];
  // Avro decoding with a schema registry: the consumer alone, on synthetic MSK events.
  if (wanted("avro")) results.avro = await (await import("./avro.ts")).runAvroBench();
  // The outbox relay to SQS does not depend on Kafka: once.
  if (wanted("outbox"))
    results.outbox = await (await import("./outbox.ts")).runOutboxBench(["sqs", "sqsFifo"]);
  const perSubstrate: Record<string, Record<string, unknown>> = {};
  for (const substrate of substrates) {
    if (!bound.some(([key]) => wanted(key))) break;
    // The bench's mock is the emulators' own; the real cluster is started for its turn only.
    const kafka =
      substrate === "mock" ? emulators.kafka : await startLocalKafka("real", 3, { fullJit: true });
    process.env.KAFKA_BROKERS = kafka.brokers.join(",");
    process.env.KAFKA_IDEMPOTENT = String(substrate === "real");
    console.error(
      `Kafka benchmarks on ${substrate === "real" ? "3 Apache Kafka brokers" : "the librdkafka mock"}...`,
    );
    try {
      const figures: Record<string, unknown> = {};
      for (const [key, run] of bound) if (wanted(key)) figures[key] = await run();
      perSubstrate[substrate] = figures;
    } finally {
      if (substrate === "real") await kafka.stop();
      process.env.KAFKA_BROKERS = emulators.env.KAFKA_BROKERS!;
      process.env.KAFKA_IDEMPOTENT = emulators.env.KAFKA_IDEMPOTENT!;
    }
  }
  if (Object.keys(perSubstrate).length > 0) results.kafkaSubstrates = perSubstrate;
  const sqs = results.sqs as Awaited<ReturnType<typeof runSqsBench>> | undefined;
  // The headline fields are the SQS idempotency comparison; every workload's details follow.
  const summary = {
    ...(sqs
      ? {
          ours: {
            msgsPerSec: sqs.ours.msgsPerSec,
            ddbRequestsPerNewMessage: sqs.ours.ddbRequestsPerNewMessage,
          },
          powertools: {
            msgsPerSec: sqs.powertools.msgsPerSec,
            ddbRequestsPerNewMessage: sqs.powertools.ddbRequestsPerNewMessage,
          },
          ratio: sqs.ratio,
          // Each side's rate as a fraction of what DynamoDB Local does alone with its writes (bench/ceilings.ts).
          ceilingFraction: sqs.ceilingFraction,
        }
      : {}),
    ...results,
    ...(coldStart ? { coldStart } : {}),
  };
  console.log(`BENCH ${JSON.stringify(summary)}`);
} finally {
  await emulators.stop();
}
