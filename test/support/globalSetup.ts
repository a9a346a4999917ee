import type { TestProject } from "vitest/node";
import { type Emulators, startEmulators } from "../../lib/local/emulators.ts";

declare module "vitest" {
  export interface ProvidedContext {
    emulatorEnv: Record<string, string>;
  }
}

// Every project of the run calls setup; they share one set of emulators, stopped by the last teardown.
let emulators: Promise<Emulators> | undefined;
let users = 0;

/** Starts DynamoDB Local, fauxqs and the Kafka mock once for the whole run. */
export async function setup(project: TestProject): Promise<void> {
  users++;
  emulators ??= startEmulators();
  project.provide("emulatorEnv", (await emulators).env);
}

export async function teardown(): Promise<void> {
  if (--users > 0 || !emulators) return;
  const running = emulators;
  emulators = undefined;
  await (await running).stop();
}
