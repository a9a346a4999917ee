import { type ChildProcess, spawn, spawnSync } from "node:child_process";

/**
 * Emulator processes must never outlive the run that started them, even when that run is
 * killed with SIGKILL. Two layers make that hold:
 *  1. every child keeps a pipe on its stdin and exits when the pipe closes (the kernel closes it
 *     when this process dies, however it dies);
 *  2. on exit, SIGINT and SIGTERM we also kill the children outright, for a prompt stop.
 */
const live = new Set<ChildProcess>();
let hooked = false;

function killAll(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  live.clear();
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      killAll();
      // Re-raise with the default action so the exit status says what happened.
      process.kill(process.pid, signal);
    });
  }
}

/** A tool the emulators need (Java, kcat) is not installed; the message says how to install it. */
export class MissingPrerequisiteError extends Error {
  /** Always `MissingPrerequisiteError`. */
  override readonly name = "MissingPrerequisiteError";
}

/** Fails at once, with the install hint, when a command is not on PATH. */
export function requireCommand(command: string, installHint: string): void {
  const probe = spawnSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" });
  if (probe.status !== 0) {
    throw new MissingPrerequisiteError(`'${command}' was not found on PATH. Install it: ${installHint}`);
  }
}

/** Spawns a child whose stdin stays an open pipe for as long as this process lives. */
export function spawnGuarded(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): ChildProcess {
  hookExit();
  const child = spawn(command, args, {
    cwd: options.cwd,
    ...(options.env ? { env: options.env } : {}),
    stdio: ["pipe", "pipe", "pipe"],
  });
  live.add(child);
  child.once("exit", () => live.delete(child));
  // Unref'd so an open emulator never keeps a finished test run alive on its own.
  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    (stream as unknown as { unref?: () => void } | null)?.unref?.();
  }
  return child;
}

/** Waits for a line matching `pattern` on the child's stdout or stderr; rejects on exit or timeout. */
export function waitForLine(
  child: ChildProcess,
  pattern: RegExp,
  timeoutMs: number,
  what: string,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let tail = "";
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
    };
    const onData = (chunk: Buffer) => {
      tail = (tail + chunk.toString("utf8")).slice(-8192);
      const match = tail.match(pattern);
      if (match) {
        cleanup();
        resolve(match);
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(
        new Error(`${what} exited before it was ready (code ${code}, signal ${signal}). Output:\n${tail}`),
      );
    };
    const timer = setTimeout(() => {
      cleanup();
      child.kill("SIGKILL");
      reject(new Error(`${what} was not ready within ${timeoutMs} ms. Output:\n${tail}`));
    }, timeoutMs);
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
  });
}

/** Keeps reading a chatty child's output so its pipe never fills and blocks it. */
export function drain(child: ChildProcess): void {
  child.stdout?.resume();
  child.stderr?.resume();
}

/** Stops a child and resolves once it has exited. */
export async function stopChild(child: ChildProcess, graceMs = 2000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.stdin?.end();
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}
