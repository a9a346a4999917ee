/**
 * `npx reliable-consumers-local <command>` (and `npx reliable-consumers local|emulators`, which
 * hands over to `runCli` here):
 *   local      run your CDK app on the embedded emulators until Ctrl-C (see localCommand.ts); the
 *              default command
 *   emulators  start DynamoDB Local, fauxqs and the Kafka mock, print their endpoints
 */
import { MissingPrerequisiteError } from "./childProcess.ts";
import { emulatorsCommand } from "./emulatorsCommand.ts";
import { LOCAL_USAGE, localCommand } from "./localCommand.ts";

const USAGE = `usage: reliable-consumers-local [local|emulators] [options]
  local      run your CDK app on the embedded emulators (DynamoDB Local, fauxqs, a Kafka mock) until Ctrl-C (the default)
  emulators  start the emulators and print their endpoints (--kafka real: an Apache Kafka broker, not the mock)

${LOCAL_USAGE}`;

const COMMANDS: Readonly<Record<string, (argv: string[]) => Promise<number>>> = {
  local: localCommand,
  emulators: emulatorsCommand,
};

/** Runs one command of the CLI and resolves to its exit code (3: a missing prerequisite). */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === "--help" || first === "-h") {
    console.error(USAGE);
    return 0;
  }
  // No command, or options first: `local`, as `npx reliable-consumers-local --app ...`.
  const named = first !== undefined && !first.startsWith("-");
  const name = named ? first : "local";
  const command = COMMANDS[name];
  if (!command) {
    console.error(USAGE);
    return 2;
  }
  try {
    return await command(named ? rest : [...argv]);
  } catch (error) {
    // A missing tool is one line with its install command; anything else keeps its stack.
    const e = error as Error;
    console.error(`${name}: ${e instanceof MissingPrerequisiteError ? e.message : (e.stack ?? String(e))}`);
    return e instanceof MissingPrerequisiteError ? 3 : 1;
  }
}
