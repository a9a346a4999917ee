/**
 * `npm run chaos`: the reference service under faults, checked on stored data.
 *
 *   npm run chaos                         # every scenario (1-14), default sizes
 *   npm run chaos -- --only 3,5           # some scenarios (6: the bad-input corpus; 7: the relay's mapping gives up; 11: a record kills its function)
 *   npm run chaos -- --seed 42 --rate 0.1 # reproducible faults, 10 % of requests faulted
 *   npm run chaos -- --small              # smaller runs
 *   npm run chaos -- --only 3 --orders 2000 # scenario 3 at another size (default 5,000; --small 300)
 *   npm run chaos -- --only 9 --small     # one scenario on the real brokers, small
 *   npm run chaos -- --only 12,13,14      # Kinesis: poison in a shard, a reshard, crashes mid-batch
 *   npm run chaos -- --kafka mock         # on the librdkafka mock (scenarios 8-10 need real brokers)
 *
 * Kafka is a real 3-broker Apache Kafka cluster (RF 3, min.insync.replicas 2) by default.
 *
 * The last line is `CHAOS {json}`. Exit 0 only when no scenario lost a message, none has a
 * duplicate effect on the transactional path, every repeated external effect is accounted for by
 * an injected crash, nothing is half-applied and every aggregate kept its order.
 */
import { startEmulators } from "reliable-consumers-local";
import { kafkaSubstrateFromArgs } from "../local/src/emulators.ts";
import { badInputsThroughService } from "./badInputScenario.ts";
import { leadersMove, oneBrokerDown, twoBrokersDown } from "./brokerScenarios.ts";
import { chaosDenials, disposeChaosApp, synthesizeChaosApp } from "./chaosService.ts";
import { recordKillsItsFunction } from "./crashScenario.ts";
import { kinesisCrashMidBatch, kinesisPoisonUnderLoad, kinesisReshard } from "./kinesisScenarios.ts";
import {
  brokerDownDuringRebalance,
  databaseDies,
  poisonUnderLoad,
  randomFaults,
  relayGivesUp,
  relayLosesBroker,
  type ScenarioContext,
  type ScenarioResult,
  withOwnDynamoDb,
} from "./scenarios.ts";
import { verdict } from "./verdict.ts";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const small = process.argv.includes("--small");
const seed = Number(arg("seed") ?? Date.now() % 1_000_000);
const rate = Number(arg("rate") ?? 0.05);
const kafka = kafkaSubstrateFromArgs(process.argv.slice(2), "real");
// Every scenario on the real brokers; on the mock, those that do not stop brokers (8-10 do).
const only = new Set(
  (arg("only") ?? (kafka === "real" ? "1,2,3,4,5,6,7,8,9,10,11,12,13,14" : "1,2,3,4,5,6,7,11,12,13,14"))
    .split(",")
    .map((s) => s.trim()),
);
const log = (line: string) => process.stderr.write(`${line}\n`);

// Scenarios 1 and 3 start DynamoDB Locals of their own; the others get one each here (see
// withOwnDynamoDb: DynamoDB Local slows down with what earlier runs left in it).
type Run = (ctx: ScenarioContext) => Promise<ScenarioResult>;
const own =
  (run: Run): Run =>
  (c) =>
    withOwnDynamoDb(c, run);
const plan: Array<[string, Run]> = [
  ["1", (c) => databaseDies(c, { orders: small ? 150 : 400, kills: small ? 1 : 2 })],
  ["2", own((c) => relayLosesBroker(c, { aggregates: small ? 10 : 50, versions: small ? 8 : 20 }))],
  [
    "3",
    (c) => poisonUnderLoad(c, { orders: Number(arg("orders") ?? (small ? 300 : 5_000)), poisonRate: 0.02 }),
  ],
  ["4", own((c) => brokerDownDuringRebalance(c, { events: small ? 150 : 400 }))],
  [
    "5",
    own((c) =>
      randomFaults(c, { orders: small ? 150 : 400, rate, crashRate: 0.03, longJobs: small ? 2 : 4 }),
    ),
  ],
  ["6", own(badInputsThroughService)],
  ["7", own((c) => relayGivesUp(c, { aggregates: small ? 5 : 20, versions: small ? 4 : 6 }))],
  ["8", own((c) => oneBrokerDown(c, { orders: small ? 60 : 300 }))],
  [
    "9",
    own((c) =>
      twoBrokersDown(c, {
        aggregates: small ? 6 : 30,
        versions: small ? 4 : 10,
        orders: small ? 20 : 100,
      }),
    ),
  ],
  ["10", own((c) => leadersMove(c, { events: small ? 100 : 400 }))],
  ["11", own((c) => recordKillsItsFunction(c, { orders: small ? 40 : 150, crashers: small ? 1 : 3 }))],
  [
    "12",
    own((c) =>
      kinesisPoisonUnderLoad(c, {
        customers: small ? 20 : 100,
        versions: small ? 10 : 30,
        poison: small ? 6 : 40,
      }),
    ),
  ],
  ["13", own((c) => kinesisReshard(c, { customers: small ? 20 : 60, versions: small ? 12 : 30 }))],
  [
    "14",
    own((c) =>
      kinesisCrashMidBatch(c, {
        customers: small ? 12 : 40,
        versions: small ? 8 : 20,
        always: small ? 1 : 2,
        once: small ? 1 : 3,
      }),
    ),
  ],
];
// Checked before the emulators start and the app is synthesized.
const unknown = [...only].filter((n) => !plan.some(([m]) => m === n));
if (unknown.length > 0)
  throw new Error(`--only: no scenario ${unknown.join(", ")} (there are 1 to ${plan.length})`);

const emulators = await startEmulators({ applyEnv: false, kafka, kafkaBrokers: 3 });
// The scenarios' own SDK clients read the region and credentials from here.
Object.assign(process.env, {
  AWS_REGION: emulators.env.AWS_REGION,
  AWS_ACCESS_KEY_ID: "local",
  AWS_SECRET_ACCESS_KEY: "local",
  // The functions' producers: idempotent on real brokers, not on the mock (no InitProducerId).
  KAFKA_IDEMPOTENT: emulators.env.KAFKA_IDEMPOTENT,
  POWERTOOLS_LOG_LEVEL: "SILENT",
  POWERTOOLS_METRICS_DISABLED: "true",
});
log("chaos: synthesizing the reference service (chaos/chaosApp.ts)…");
const synthStarted = Date.now();
const assembly = await synthesizeChaosApp().catch(async (error: unknown) => {
  await emulators.stop();
  throw error;
});
log(`chaos: synthesized in ${((Date.now() - synthStarted) / 1000).toFixed(1)} s`);
const ctx: ScenarioContext = {
  assembly,
  endpoints: {
    dynamodb: emulators.dynamodb.endpoint,
    sqs: emulators.sqs.endpoint,
    kafkaBrokers: emulators.kafka.brokers,
    kinesis: emulators.kinesis?.endpoint ?? "",
  },
  ...(emulators.kafka.cluster ? { kafkaCluster: emulators.kafka.cluster } : {}),
  seed,
  log,
};
log(
  `chaos: seed ${seed}, fault rate ${rate}, ${small ? "small" : "default"} sizes, Kafka: ${kafka === "real" ? `${emulators.kafka.brokers.length} Apache Kafka brokers` : "the librdkafka mock"}`,
);

const results: ScenarioResult[] = [];
let exitCode = 0;
try {
  for (const [n, run] of plan) {
    if (!only.has(n)) continue;
    log(`scenario ${n}…`);
    try {
      const r = await run(ctx);
      results.push(r);
      log(`scenario ${n} ${r.name}: ${JSON.stringify(r.figures)} (${(r.durationMs / 1000).toFixed(1)} s)`);
      const bad = Object.entries(r.details).filter(([, v]) => (Array.isArray(v) ? v.length > 0 : false));
      for (const [k, v] of bad) log(`  ${k}: ${JSON.stringify((v as unknown[]).slice(0, 10))}`);
    } catch (error) {
      log(`scenario ${n} failed to run: ${(error as Error).stack ?? error}`);
      exitCode = 1;
    }
  }
} finally {
  disposeChaosApp(assembly);
  await emulators.stop();
}
const v = verdict(results, chaosDenials());
if (!v.ok) exitCode = 1;
for (const reason of v.reasons) log(`FAIL: ${reason}`);
process.stdout.write(
  `CHAOS ${JSON.stringify({ ok: exitCode === 0, seed, rate, denials: chaosDenials().length, scenarios: Object.fromEntries(results.map((r) => [r.name, r.figures])) })}\n`,
);
process.exit(exitCode);
