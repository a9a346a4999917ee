/**
 * The console as the commands start it: `reliable-consumers local` and `npm run local` over their
 * running app, `npm run emulators` over the bare emulators. One telemetry hub per run, created
 * before the runtime so that it reads every function's log from the first line.
 */
import type { LocalRuntime } from "../runtime/localRuntime.ts";
import type { LocalFunction } from "../runtime/model.ts";
import { type LocalConsole, startConsole } from "./consoleServer.ts";
import { fanOut, type TelemetryHub } from "./telemetryHub.ts";

export type { LocalConsole } from "./consoleServer.ts";
export { createTelemetryHub, type TelemetryHub } from "./telemetryHub.ts";

/** `--console-port <n>` and `--no-console`, as the commands take them. */
export interface ConsoleFlags {
  readonly console?: boolean | undefined;
  readonly "console-port"?: string | undefined;
}

/** parseArgs options for the flags (`allowNegative` gives `--no-console`). */
export const CONSOLE_ARGS = {
  console: { type: "boolean", default: true },
  "console-port": { type: "string" },
} as const;

export const CONSOLE_USAGE = `  --console-port <n>  the local console's port on 127.0.0.1 (default: a free one)
  --no-console        do not serve the local console`;

/** The port asked for, if any (`0`: a free one); throws on a port that is not one. */
export function consolePort(flags: ConsoleFlags): number | undefined {
  const raw = flags["console-port"];
  if (raw === undefined) return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new Error(`--console-port ${raw}: not a port`);
  return port;
}

/** The runtime's `logTee` that feeds the hub, and also `terminal` (the CLI's prefixed lines) when given. */
export function consoleLogTee(
  hub: TelemetryHub,
  terminal?: (fn: LocalFunction) => NodeJS.WritableStream,
): (fn: LocalFunction) => NodeJS.WritableStream {
  return (fn) => (terminal ? fanOut(terminal(fn), hub.sink(fn.name)) : hub.sink(fn.name));
}

/** The console over a running app. */
export function consoleForRuntime(
  runtime: LocalRuntime,
  emulatorEnv: Readonly<Record<string, string>>,
  telemetry: TelemetryHub,
  port: number | undefined,
): Promise<LocalConsole> {
  return startConsole({
    sources: {
      app: runtime.app,
      host: runtime.host,
      eventSources: runtime.eventSources,
      denials: runtime.denials,
      telemetry,
      enforceIam: runtime.enforcement.enforceIam,
      emulatorEnv,
      toolEnv: runtime.enforcement.runtimeEnv,
    },
    ...(port !== undefined ? { port } : {}),
  });
}

/** The console over the emulators alone (`npm run emulators`): queues, topics, outbox and dedup tables. */
export function consoleForEmulators(
  emulatorEnv: Readonly<Record<string, string>>,
  port: number | undefined,
): Promise<LocalConsole> {
  return startConsole({ sources: { emulatorEnv }, ...(port !== undefined ? { port } : {}) });
}
