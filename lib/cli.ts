#!/usr/bin/env node
/**
 * `npx reliable-consumers <command>`:
 *   dlq        inspect, replay and redrive dead letters (lib/dlq/cli.ts), against AWS or any endpoint
 *   local      run your CDK app on local emulators: handed to the `reliable-consumers-local` package
 *   emulators  the same package's emulators
 *
 * The local runtime is a package apart, so that installing this library brings no emulator. The two
 * commands it serves stay here as hand-overs, so scripts written as `reliable-consumers local` keep
 * working once the local package is installed beside this one.
 */
import { main as dlqMain } from "./dlq/cli.ts";
import { disconnectAllKafkaProducers } from "./kafka/producer.ts";

const LOCAL_PACKAGE = "reliable-consumers-local";

const USAGE = `usage: reliable-consumers <command> [options]
  dlq        inspect, replay and redrive dead letters (reliable-consumers dlq --help)
  local      run your CDK app on local emulators (needs ${LOCAL_PACKAGE})
  emulators  start the local emulators and print their endpoints (needs ${LOCAL_PACKAGE})`;

async function dlq(argv: string[]): Promise<number> {
  try {
    return await dlqMain(argv);
  } finally {
    await disconnectAllKafkaProducers();
  }
}

/** Hands `local` and `emulators` to the local package's CLI, or says how to install it (exit 3). */
async function handOver(argv: string[]): Promise<number> {
  let cli: { runCli(argv: readonly string[]): Promise<number> };
  try {
    cli = await import(`${LOCAL_PACKAGE}/cli`);
  } catch (error) {
    // Only the package itself missing; a dependency missing inside it keeps its own error.
    const e = error as NodeJS.ErrnoException;
    if (e.code !== "ERR_MODULE_NOT_FOUND" || !e.message.includes(`'${LOCAL_PACKAGE}'`)) throw error;
    console.error(
      `${argv[0]}: the local runtime is the package ${LOCAL_PACKAGE}. Install it beside this one:\n` +
        `  npm install --save-dev ${LOCAL_PACKAGE}\n` +
        `then run \`npx ${LOCAL_PACKAGE} ${argv.join(" ")}\` (or this command again).`,
    );
    return 3;
  }
  return cli.runCli(argv);
}

async function run(name: string | undefined, rest: string[]): Promise<number> {
  if (name === "dlq") return dlq(rest);
  if (name === "local" || name === "emulators") return handOver([name, ...rest]);
  console.error(USAGE);
  return name === "--help" || name === "-h" ? 0 : 2;
}

const [name, ...rest] = process.argv.slice(2);
process.exit(await run(name, rest));
