/**
 * `npm run local`: the reference service on the embedded emulators, with Lambda's trigger
 * semantics, end to end. Starts DynamoDB Local, fauxqs and an Apache Kafka broker; synthesizes the CDK app;
 * materialises it; runs the bundled functions; sends orders with duplicates, poison and a few long
 * jobs; waits until everything is quiet; counts the outcome from the stored data and prints
 * `RESULT {json}` as its last line. Exit 0 only when nothing was lost, no effect happened twice and
 * no call was denied for lack of a grant (the gateway enforces each function's IAM policies).
 *
 *   npm run local -- [--messages 2000] [--duplicates 10] [--poison 1] [--long-jobs 3] [--keep]
 *                    [--cdk-out <dir>] [--timeout 600] [--verbose] [--kafka mock|real]
 *                    [--rate 100 --duration 60 [--warmup 20]]
 *
 * `--rate N --duration S` offers a steady N orders per second for S seconds (N × S messages)
 * instead of a burst, so the e2e latency (send to charge, and its legs) measures the path, not the
 * queue a burst builds. `--warmup W` reports the same figures again (`afterWarmup`) over the orders
 * sent after the first W seconds, past the JIT's and the cold starts' backlog.
 *
 * Kafka is a real Apache Kafka broker (KRaft, from Maven Central), as MSK runs: topics as the stack
 * declares them, the idempotent producer, no 9 s group joins. `--kafka mock` runs it on librdkafka's
 * mock instead (lighter; the default of `reliable-consumers local` for your own app).
 */
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { Kafka, logLevel } from "kafkajs";
// kafkajs 2.2.4 warns TimeoutNegativeWarning on every connection without it (see the file).
import "../lib/kafka/kafkajsRequestQueueFix.ts";
import { createSqsClient } from "reliable-consumers/sqs";
import {
  formatReport,
  type LocalRuntime,
  startEmulators,
  startLocalRuntime,
  synthesize,
} from "reliable-consumers-local";
import {
  CONSOLE_ARGS,
  consoleForRuntime,
  consoleLogTee,
  consolePort,
  createTelemetryHub,
  type LocalConsole,
} from "../local/src/console/localConsole.ts";
import { kafkaSubstrateFromArgs } from "../local/src/emulators.ts";
import { startPaymentProvider } from "./paymentProvider.ts";
import {
  census,
  type ScenarioTargets,
  scenarioTargets,
  sendOrders,
  waitUntilQuiet,
} from "./referenceScenario.ts";

const PROJECT_DIR = resolve(import.meta.dirname, "..");
const WORK_DIR = join(PROJECT_DIR, ".tmp", "local-runtime");

/** `10`, `10%` or `0.1` → 0.1. */
export function parseFraction(raw: string, name: string): number {
  const text = raw.trim();
  const n = Number(text.endsWith("%") ? text.slice(0, -1) : text);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a percentage, got ${raw}`);
  const f = text.endsWith("%") || n >= 1 ? n / 100 : n;
  if (f > 0.9) throw new Error(`--${name} must be at most 90 %`);
  return f;
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function keepInstructions(
  runtime: LocalRuntime,
  env: Record<string, string>,
  targets: ScenarioTargets,
  logDir: string,
): string[] {
  const e = `AWS_ENDPOINT_URL_SQS=${env.AWS_ENDPOINT_URL_SQS} AWS_ENDPOINT_URL_DYNAMODB=${env.AWS_ENDPOINT_URL_DYNAMODB} AWS_REGION=${env.AWS_REGION} AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local`;
  return [
    "",
    "Everything keeps running (Ctrl-C stops it). Endpoints:",
    ...Object.entries(env).map(([k, v]) => `  ${k}=${v}`),
    `Function logs: ${logDir}`,
    "Queues:",
    ...runtime.app.queues.map((q) => `  ${q.name}  ${q.url}`),
    `Tables: ${runtime.app.tables.map((t) => t.name).join(", ")}`,
    `Topics: ${runtime.app.topics.map((t) => t.name).join(", ")}`,
    "Try:",
    `  ${e} aws sqs send-message --queue-url ${targets.orders.url} --message-body '{"orderId":"o-1","customerId":"c-1","amountCents":1200,"items":[]}'`,
    `  ${e} aws dynamodb get-item --table-name ${targets.appTable} --key '{"pk":{"S":"ORDER#o-1"},"sk":{"S":"ORDER"}}'`,
    `  ${e} aws sqs receive-message --queue-url ${targets.ordersDlq.url} --max-number-of-messages 10 --attribute-names All --message-attribute-names All`,
    `  kcat -b ${env.KAFKA_BROKERS} -C -t ${targets.mainTopic} -e -f '%k %h %s\\n'`,
    `  ${e} npm run dlq -- --help`,
  ];
}

/** The command line: `undefined` after `--help`. */
function cliOptions() {
  const { values } = parseArgs({
    options: {
      messages: { type: "string", default: "2000" },
      duplicates: { type: "string", default: "10" },
      poison: { type: "string", default: "1" },
      "long-jobs": { type: "string", default: "3" },
      "long-job-ms": { type: "string", default: "4000" },
      keep: { type: "boolean", default: false },
      "cdk-out": { type: "string" },
      timeout: { type: "string", default: "600" },
      "max-environments": { type: "string" },
      verbose: { type: "boolean", default: false },
      kafka: { type: "string", default: "real" },
      rate: { type: "string" },
      duration: { type: "string" },
      warmup: { type: "string" },
      "enforce-iam": { type: "boolean", default: true },
      ...CONSOLE_ARGS,
      help: { type: "boolean", default: false },
    },
    allowNegative: true,
  });
  if (values.help) {
    log(
      "usage: npm run local -- [--messages N | --rate N --duration S [--warmup S]] [--duplicates PCT] [--poison PCT] [--long-jobs N] [--keep] [--cdk-out DIR] [--timeout S] [--kafka mock|real] [--no-enforce-iam] [--console-port N] [--no-console]",
    );
    return undefined;
  }
  const rate = values.rate !== undefined ? Number(values.rate) : undefined;
  if (rate !== undefined && !(rate > 0))
    throw new Error("--rate must be a positive number of messages per second");
  if ((rate === undefined) !== (values.duration === undefined))
    throw new Error("--rate and --duration go together (a steady rate for so many seconds)");
  const options = {
    messages: rate !== undefined ? Math.round(rate * Number(values.duration)) : Number(values.messages),
    duplicates: parseFraction(values.duplicates, "duplicates"),
    poison: parseFraction(values.poison, "poison"),
    longJobs: Number(values["long-jobs"]),
    longJobMs: Number(values["long-job-ms"]),
    ...(rate !== undefined ? { rate } : {}),
    ...(values.warmup !== undefined ? { warmupSeconds: Number(values.warmup) } : {}),
  };
  if (options.warmupSeconds !== undefined && !(options.warmupSeconds >= 0 && rate !== undefined))
    throw new Error("--warmup takes seconds (>= 0) of a steady run (--rate and --duration)");
  if (!Number.isInteger(options.messages) || options.messages < 1)
    throw new Error("--messages (or --rate × --duration) must be a positive integer");
  return { values, options };
}

/** The `RESULT` line: what was sent, what the stored data says became of it, and the timings. */
function scenarioResult(
  sent: Awaited<ReturnType<typeof sendOrders>>,
  c: Awaited<ReturnType<typeof census>>,
  timing: { started: number; setupMs: number; t0: number; quiet: boolean },
  denials: number,
) {
  return {
    sent: sent.sent,
    unique: sent.firstSentAt.size,
    ordersStored: c.ordersStored,
    duplicatesSuppressed: sent.validSends - c.outboxEvents,
    dlq: c.dlq,
    outboxPublished: c.outboxPublished,
    kafkaConsumed: c.kafkaConsumed,
    charged: c.charged,
    lost: c.lost,
    duplicateEffects: c.duplicateEffects,
    e2eP50Ms: c.e2eP50Ms,
    e2eP99Ms: c.e2eP99Ms,
    e2eStagesMs: c.e2eStagesMs,
    ...(c.afterWarmup ? { afterWarmup: { fromSecond: sent.warmupSeconds, ...c.afterWarmup } } : {}),
    // The offered rate (`--rate`, else a burst) and what the sends achieved.
    offeredRate: sent.offeredRate ?? "burst",
    sendRate: sent.sendRate,
    elapsedMs: Date.now() - timing.started,
    setupMs: timing.setupMs,
    processingMs: Date.now() - timing.t0,
    poison: sent.poison,
    duplicateSends: sent.duplicateSends,
    kafkaDeadLetters: c.kafkaDeadLetters,
    paymentReplays: c.paymentReplays,
    longJobs: { sent: sent.longJobs.length, done: c.reportsDone },
    lostDetail: c.lostDetail,
    quiet: timing.quiet,
    // Calls refused for lack of a grant: each one would fail on AWS too.
    denials,
  };
}

/** Nothing lost, no effect twice, no call denied (each denial listed with its grant). */
function verdict(result: ReturnType<typeof scenarioResult>, runtime: LocalRuntime): boolean {
  for (const line of runtime.denials.summary()) log(`local: DENIED ${line}`);
  return result.lost === 0 && result.duplicateEffects === 0 && result.denials === 0;
}

/**
 * The runtime on the synthesized app, with the one local overlay (the payment consumer calls the
 * local provider, like `sam local --env-vars`), and the local console over it unless --no-console.
 */
async function runtimeAndConsole(
  values: NonNullable<ReturnType<typeof cliOptions>>["values"],
  cdkOut: string,
  logDir: string,
  providerUrl: string,
  emulatorEnv: Record<string, string>,
): Promise<{ runtime: LocalRuntime; served: LocalConsole | undefined }> {
  const hub = values.console ? createTelemetryHub() : undefined;
  const runtime = await startLocalRuntime({
    cdkOut,
    logDir,
    envOverrides: { "/payment-consumer/": { PAYMENT_GATEWAY_URL: providerUrl } },
    enforceIam: values["enforce-iam"],
    ...(hub ? { logTee: consoleLogTee(hub) } : {}),
    ...(values["max-environments"] ? { maxEnvironmentsPerFunction: Number(values["max-environments"]) } : {}),
  });
  try {
    const served = hub ? await consoleForRuntime(runtime, emulatorEnv, hub, consolePort(values)) : undefined;
    return { runtime, served };
  } catch (error) {
    await runtime.stop();
    throw error;
  }
}

/** Starts the emulators, then synthesizes the CDK app (unless `--cdk-out` names one). */
async function emulatorsAndApp(values: { kafka: string; "cdk-out"?: string | undefined }, runDir: string) {
  log(
    `local: starting DynamoDB Local, fauxqs and ${values.kafka === "real" ? "an Apache Kafka broker" : "the Kafka mock"}; synthesizing the CDK app...`,
  );
  // One after the other: on a small machine, esbuild bundling slows the emulators' start (JVM) past its timeout.
  const emulators = await startEmulators({ kafka: kafkaSubstrateFromArgs(["--kafka", values.kafka]) });
  const synthStarted = Date.now();
  let cdkOut: string;
  try {
    cdkOut = values["cdk-out"]
      ? resolve(values["cdk-out"])
      : await synthesize({ projectDir: PROJECT_DIR, outdir: join(runDir, "cdk.out") });
  } catch (error) {
    await emulators.stop();
    throw error;
  }
  if (!values["cdk-out"]) log(`local: synthesized in ${((Date.now() - synthStarted) / 1000).toFixed(1)} s`);
  return { emulators, cdkOut };
}

/**
 * This process's CPU and its main thread's event-loop delay from now to `stop()`. The main thread
 * carries the gateways, fauxqs, the pollers and the payment provider (the functions run in worker
 * threads): its delay is what every proxied call waits.
 */
function loadProbe(): { stop(): string } {
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const cpu0 = process.cpuUsage();
  const t0 = Date.now();
  const ms = (ns: number) => `${(ns / 1e6).toFixed(0)} ms`;
  return {
    stop() {
      loopDelay.disable();
      const { user, system } = process.cpuUsage(cpu0);
      return `this process (runtime, gateways, fauxqs, functions' workers): ${((user + system) / 1e6).toFixed(1)} s CPU in ${((Date.now() - t0) / 1000).toFixed(1)} s; main thread's event-loop delay p50 ${ms(loopDelay.percentile(50))}, p99 ${ms(loopDelay.percentile(99))}, max ${ms(loopDelay.max)}`;
    },
  };
}

function logHostStats(runtime: LocalRuntime, load: string): void {
  for (const s of runtime.host.stats())
    log(
      `  ${s.name}: ${s.invocations} invocations, ${s.coldStarts} cold starts, limit ${s.concurrencyLimit}`,
    );
  // Where the emulators' load came from: every AWS call of the run, by operation.
  const ops = [...runtime.enforcement.gateway.operations].sort((a, b) => b[1] - a[1]);
  log(`  AWS calls: ${ops.map(([op, n]) => `${op} ${n}`).join(", ")}`);
  log(`  ${load}`);
}

async function main(): Promise<number> {
  const started = Date.now();
  const cli = cliOptions();
  if (!cli) return 0;
  const { values, options } = cli;

  const runDir = join(WORK_DIR, String(process.pid));
  const logDir = join(runDir, "logs");
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });

  const { emulators, cdkOut } = await emulatorsAndApp(values, runDir);
  const ddb = new DynamoDBClient({});
  const sqs = createSqsClient();
  const kafka = new Kafka({
    clientId: "local-scenario",
    brokers: emulators.kafka.brokers,
    logLevel: logLevel.NOTHING,
  });
  const provider = await startPaymentProvider(ddb);
  let runtime: LocalRuntime | undefined;
  let served: LocalConsole | undefined;
  const shutdown = async () => {
    await served?.stop();
    await runtime?.stop();
    await provider.stop();
    ddb.destroy();
    sqs.destroy();
    await emulators.stop();
  };
  const boundedShutdown = () =>
    Promise.race([
      shutdown(),
      sleep(30_000).then(() =>
        log("local: shutdown took over 30 s; exiting anyway (the emulators stop with this process)"),
      ),
    ]);
  try {
    ({ runtime, served } = await runtimeAndConsole(values, cdkOut, logDir, provider.url, emulators.env));
    for (const line of formatReport(runtime.app)) log(line);
    log(
      `  - payment-consumer: PAYMENT_GATEWAY_URL=${provider.url} (local payment provider, charges stored in ${provider.tableName})`,
    );
    const targets = scenarioTargets(runtime);
    const setupMs = Date.now() - started;
    log(
      `local: ready in ${(setupMs / 1000).toFixed(1)} s; function logs in ${logDir}${served ? `; console ${served.url}` : ""}`,
    );

    const t0 = Date.now();
    const load = values.verbose ? loadProbe() : undefined;
    const since = () => `${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s`;
    const sent = await sendOrders(sqs, targets, options, (n) => {
      if (n % 500 < 10 || n === options.messages) log(`[${since()}] sent ${n}/${options.messages}`);
    });
    log(
      `[${since()}] sent ${sent.sent} messages: ${sent.firstSentAt.size} orders, ${sent.duplicateSends} duplicate sends, ${sent.poison} poison; ${sent.longJobs.length} long jobs`,
    );
    const quiet = await waitUntilQuiet({
      runtime,
      ddb,
      sqs,
      kafka,
      targets,
      providerTable: provider.tableName,
      timeoutMs: Number(values.timeout) * 1000,
      onProgress: (s) =>
        log(
          `[${since()}] queued ${s.queued} · outbox pending ${s.outboxPending} · kafka lag ${s.kafkaLag} · running ${s.busy} · charged ${s.charged}/${sent.firstSentAt.size}`,
        ),
    });
    if (!quiet) log(`local: not quiet after ${values.timeout} s; counting what is there`);
    const c = await census({ ddb, sqs, kafka, targets, providerTable: provider.tableName, sent });
    const result = scenarioResult(sent, c, { started, setupMs, t0, quiet }, runtime.denials.all().length);
    const ok = verdict(result, runtime);
    if (load) logHostStats(runtime, load.stop());
    if (values.keep) {
      for (const line of keepInstructions(runtime, emulators.env, targets, logDir)) log(line);
      process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
      await new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      await shutdown();
      return ok ? 0 : 1;
    }
    // The verdict first: a shutdown that hangs must not swallow it.
    process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
    await boundedShutdown();
    return ok ? 0 : 1;
  } catch (error) {
    await boundedShutdown().catch(() => undefined);
    throw error;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(`local: ${(error as Error).stack ?? String(error)}`);
    process.exit(2);
  },
);
