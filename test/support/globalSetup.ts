import type { TestProject } from "vitest/node";
import { type Emulators, startEmulators } from "../../lib/local/emulators.ts";

declare module "vitest" {
  export interface ProvidedContext {
    emulatorEnv: Record<string, string>;
  }
}

let emulators: Emulators | undefined;

/** Starts DynamoDB Local, fauxqs and the Kafka mock once for the whole run. */
export async function setup(project: TestProject): Promise<void> {
  emulators = await startEmulators();
  project.provide("emulatorEnv", emulators.env);
}

export async function teardown(): Promise<void> {
  await emulators?.stop();
}
