/**
 * `reliable-consumers emulators [--kafka real]`: starts DynamoDB Local, fauxqs and Kafka (the
 * librdkafka mock by default, a real single Apache Kafka broker with `--kafka real`); Ctrl-C stops them.
 */
import { kafkaSubstrateFromArgs, startEmulators } from "./emulators.ts";
import { assertPrerequisites } from "./prerequisites.ts";
import { untilSignal } from "./signals.ts";

export async function emulatorsCommand(args: readonly string[] = []): Promise<number> {
  assertPrerequisites({ dynamodb: true, sqs: true, kafka: true, iam: false });
  const t0 = performance.now();
  const emulators = await startEmulators({ kafka: kafkaSubstrateFromArgs(args) });
  const ms = Math.round(performance.now() - t0);
  console.log(`emulators up in ${ms} ms (all on 127.0.0.1)`);
  console.log(`  DynamoDB + Streams  ${emulators.dynamodb.endpoint}`);
  console.log(`  SQS (fauxqs)        ${emulators.sqs.endpoint}`);
  console.log(
    `  ${emulators.kafka.substrate === "real" ? "Kafka brokers     " : "Kafka mock brokers"}  ${emulators.kafka.brokers.join(",")}`,
  );
  console.log("\nexport these to point AWS SDK v3 clients and kafkajs at them:");
  for (const [k, v] of Object.entries(emulators.env)) console.log(`export ${k}=${v}`);
  console.log("\nCtrl-C stops everything.");
  await untilSignal();
  await emulators.stop();
  return 0;
}
