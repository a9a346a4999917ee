#!/usr/bin/env node
/**
 * `npx reliable-consumers <command>`:
 *   local      run your CDK app on the embedded emulators until Ctrl-C (see localCommand.ts)
 *   emulators  start DynamoDB Local, fauxqs and the Kafka mock, print their endpoints
 *   dlq        inspect, replay and redrive dead letters (see lib/dlq/cli.ts)
 */
import { main as dlqMain } from "../dlq/cli.ts";
import { disconnectAllKafkaProducers } from "../kafka/producer.ts";
import { MissingPrerequisiteError } from "./childProcess.ts";
import { emulatorsCommand } from "./emulatorsCommand.ts";
import { LOCAL_USAGE, localCommand } from "./localCommand.ts";

const USAGE = `usage: reliable-consumers <command> [options]
  local      run your CDK app on the embedded emulators (DynamoDB Local, fauxqs, a Kafka mock) until Ctrl-C
  emulators  start the emulators and print their endpoints (--kafka real: an Apache Kafka broker, not the mock)
  dlq        inspect, replay and redrive dead letters (reliable-consumers dlq --help)

${LOCAL_USAGE}`;

const COMMANDS: Readonly<Record<string, (argv: string[]) => Promise<number>>> = {
  local: localCommand,
  emulators: (argv) => emulatorsCommand(argv),
  dlq: async (argv) => {
    try {
      return await dlqMain(argv);
    } finally {
      await disconnectAllKafkaProducers();
    }
  },
};

const [name, ...rest] = process.argv.slice(2);
const command = name ? COMMANDS[name] : undefined;
if (!command) {
  console.error(USAGE);
  process.exit(name === "--help" || name === "-h" ? 0 : 2);
}
command(rest).then(
  (code) => process.exit(code),
  (error: unknown) => {
    // A missing tool is one line with its install command; anything else keeps its stack.
    const e = error as Error;
    console.error(`${name}: ${e instanceof MissingPrerequisiteError ? e.message : (e.stack ?? String(e))}`);
    process.exit(e instanceof MissingPrerequisiteError ? 3 : 1);
  },
);
