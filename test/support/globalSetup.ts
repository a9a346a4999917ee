import type { TestProject } from "vitest/node";
// Relative, not `reliable-consumers/testing`: Vitest loads its global setup outside the test
// environments, without their `reliable-consumers-source` condition, so the package name would
// resolve to dist/, which a fresh clone does not have.
import { type Emulators, type KafkaSubstrate, startEmulators } from "../../lib/local/emulators.ts";

declare module "vitest" {
  export interface ProvidedContext {
    emulatorEnv: Record<string, string>;
    kafkaSubstrate: KafkaSubstrate;
  }
}

/**
 * The Kafka tests run on a real Apache Kafka broker (one JVM, KRaft, shared by every file of the
 * run). `RC_TEST_KAFKA=mock npx vitest run …` runs them on the librdkafka mock instead, to compare.
 */
const substrate: KafkaSubstrate = process.env.RC_TEST_KAFKA === "mock" ? "mock" : "real";

// Every project of the run calls setup; they share one set of emulators, stopped by the last teardown.
let emulators: Promise<Emulators> | undefined;
let users = 0;

/** Starts DynamoDB Local, fauxqs and Kafka once for the whole run. */
export async function setup(project: TestProject): Promise<void> {
  users++;
  emulators ??= startEmulators({ kafka: substrate });
  project.provide("emulatorEnv", (await emulators).env);
  project.provide("kafkaSubstrate", substrate);
}

export async function teardown(): Promise<void> {
  if (--users > 0 || !emulators) return;
  const running = emulators;
  emulators = undefined;
  await (await running).stop();
}
