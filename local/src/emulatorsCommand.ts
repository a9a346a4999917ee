/**
 * `reliable-consumers emulators [--kafka real] [--console-port <n>] [--no-console]`: starts
 * DynamoDB Local, fauxqs and Kafka (the librdkafka mock by default, a real single Apache Kafka
 * broker with `--kafka real`) and the local console over them; Ctrl-C stops them.
 */
import { parseArgs } from "node:util";
import { CONSOLE_ARGS, consoleForEmulators, consolePort } from "./console/localConsole.ts";
import { kafkaSubstrateFromArgs, startEmulators } from "./emulators.ts";
import { assertPrerequisites } from "./prerequisites.ts";
import { untilSignal } from "./signals.ts";

export async function emulatorsCommand(args: readonly string[] = []): Promise<number> {
  const { values } = parseArgs({
    args: [...args],
    options: { kafka: { type: "string", default: "mock" }, ...CONSOLE_ARGS },
    allowNegative: true,
  });
  const port = consolePort(values);
  assertPrerequisites({ dynamodb: true, sqs: true, kafka: true, iam: false });
  const t0 = performance.now();
  const emulators = await startEmulators({ kafka: kafkaSubstrateFromArgs(args) });
  const ms = Math.round(performance.now() - t0);
  console.log(`emulators up in ${ms} ms (all on 127.0.0.1)`);
  console.log(`  DynamoDB + Streams  ${emulators.dynamodb.endpoint}`);
  console.log(`  SQS (fauxqs)        ${emulators.sqs.endpoint}`);
  if (emulators.kinesis)
    console.log(
      `  Kinesis (kinesis-local) ${emulators.kinesis.endpoint}  (up in ${emulators.kinesis.startMs} ms)`,
    );
  console.log(
    `  ${emulators.kafka.substrate === "real" ? "Kafka brokers     " : "Kafka mock brokers"}  ${emulators.kafka.brokers.join(",")}`,
  );
  console.log("\nexport these to point AWS SDK v3 clients and kafkajs at them:");
  for (const [k, v] of Object.entries(emulators.env)) console.log(`export ${k}=${v}`);
  // The parts of the console that need no app: queues, topics, outbox and dedup tables.
  const served = values.console ? await consoleForEmulators(emulators.env, port) : undefined;
  if (served) console.log(`\nConsole (open it in a browser): ${served.url}`);
  console.log("\nCtrl-C stops everything.");
  await untilSignal();
  await served?.stop();
  await emulators.stop();
  return 0;
}
