/**
 * `npm run bench`: starts its own emulators, warms DynamoDB Local up, runs every benchmark side by
 * side with its peer, and prints `BENCH {json}` as the last line.
 */
import { existsSync } from "node:fs";
import { startEmulators } from "../lib/local/emulators.ts";
import { runSqsBench, warmUp } from "./sqsIdempotency.ts";

// `npm run bench -- --only sqs,kafka` runs a subset.
const onlyArg = process.argv.indexOf("--only");
const only = onlyArg > 0 ? new Set((process.argv[onlyArg + 1] ?? "").split(",")) : undefined;
const wanted = (key: string) => !only || only.has(key);

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

const emulators = await startEmulators();
process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
process.env.POWERTOOLS_IDEMPOTENCY_DISABLED = "false";
try {
  console.error("warming DynamoDB Local up (20,000 requests)...");
  await warmUp();
  const results: Record<string, unknown> = {};
  if (wanted("sqs")) results.sqs = await runSqsBench();
  // Benchmarks of the other capabilities, where present.
  const optional: [string, string, string][] = [
    ["kafka", "./kafka.ts", "runKafkaBench"],
    ["outbox", "./outbox.ts", "runOutboxBench"],
  ];
  for (const [key, file, fn] of optional) {
    if (!wanted(key) || !existsSync(new URL(file, import.meta.url))) continue;
    const mod = (await import(file)) as Record<string, () => Promise<unknown>>;
    results[key] = await mod[fn]!();
  }
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
        }
      : {}),
    ...results,
    ...(coldStart ? { coldStart } : {}),
  };
  console.log(`BENCH ${JSON.stringify(summary)}`);
} finally {
  await emulators.stop();
}
