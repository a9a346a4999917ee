import {
  type Emulators,
  type KafkaSubstrate,
  type LocalStack,
  startEmulators,
  startLocalStack,
} from "reliable-consumers-local";
import type { TestProject } from "vitest/node";
import type { SqsSubstrate } from "./sqsSubstrate.ts";

declare module "vitest" {
  export interface ProvidedContext {
    emulatorEnv: Record<string, string>;
    kafkaSubstrate: KafkaSubstrate;
    sqsSubstrate: SqsSubstrate;
  }
}

/**
 * The Kafka tests run on a real Apache Kafka broker (one JVM, KRaft, shared by every file of the
 * run). `RC_TEST_KAFKA=mock npx vitest run …` runs them on the librdkafka mock instead, to compare.
 */
const substrate: KafkaSubstrate = process.env.RC_TEST_KAFKA === "mock" ? "mock" : "real";

// Every project of the run calls setup; they share one set of emulators, stopped by the last teardown.
let emulators: Promise<Emulators> | undefined;
// LocalStack's runtime, started only when a project that runs on it has files in this run.
let localstack: Promise<LocalStack> | undefined;
let users = 0;

/**
 * Starts DynamoDB Local, fauxqs and Kafka once for the whole run; a project whose config provides
 * `sqsSubstrate: "localstack"` (vitest.config.ts) gets the same ones with SQS on LocalStack instead.
 */
export async function setup(project: TestProject): Promise<void> {
  users++;
  emulators ??= startEmulators({ kafka: substrate });
  const sqsSubstrate: SqsSubstrate = project.config.provide?.sqsSubstrate ?? "fauxqs";
  const env = { ...(await emulators).env };
  if (sqsSubstrate === "localstack") {
    localstack ??= startLocalStack({ services: ["sqs"] });
    env.AWS_ENDPOINT_URL_SQS = (await localstack).endpoint;
  }
  project.provide("emulatorEnv", env);
  project.provide("kafkaSubstrate", substrate);
  project.provide("sqsSubstrate", sqsSubstrate);
}

export async function teardown(): Promise<void> {
  if (--users > 0 || !emulators) return;
  const running = [emulators, localstack];
  emulators = undefined;
  localstack = undefined;
  await Promise.allSettled(running.map(async (e) => (await e)?.stop()));
}
