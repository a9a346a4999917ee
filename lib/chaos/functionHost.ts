import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Execution environments for the reference service's handlers, one child process each (see
 * functionProcess.ts): their own module state and environment, one invocation at a time, and
 * killable. A killed environment fails its invocation (`crashed`), like a Lambda runtime that died;
 * the next invocation gets a fresh one (a cold start).
 */
export interface FunctionSpec {
  readonly name: string;
  /** Absolute path of the handler module (a functions/* file). */
  readonly module: string;
  readonly exportName?: string;
  readonly env: Readonly<Record<string, string>>;
  /** @default 30 000 */
  readonly timeoutMs?: number;
  /** Extra `node` flags, e.g. `--import <preload>`. */
  readonly execArgv?: readonly string[];
  /** Told of every kill of an environment (a crash from outside, or Lambda's timeout kill). */
  readonly onKill?: (pid: number, reason: string) => void;
}

export type InvokeOutcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly crashed: boolean; readonly error: { name: string; message: string } };

export interface FunctionEnvironment {
  readonly pid: number;
  /** Running an invocation now. */
  readonly busy: boolean;
  invoke(event: unknown): Promise<InvokeOutcome>;
  /** SIGKILL: the crash. */
  kill(): void;
  readonly dead: boolean;
}

const ENTRY = fileURLToPath(new URL("./functionProcess.ts", import.meta.url));

export async function startEnvironment(spec: FunctionSpec): Promise<FunctionEnvironment> {
  const child: ChildProcess = fork(ENTRY, [], {
    env: {
      PATH: process.env.PATH ?? "",
      ...spec.env,
      AWS_LAMBDA_FUNCTION_NAME: spec.name,
      CHAOS_FUNCTION_MODULE: spec.module,
      CHAOS_FUNCTION_EXPORT: spec.exportName ?? "handler",
      POWERTOOLS_LOG_LEVEL: spec.env.POWERTOOLS_LOG_LEVEL ?? "SILENT",
      POWERTOOLS_METRICS_DISABLED: "true",
    },
    execArgv: [...(spec.execArgv ?? [])],
    stdio: ["pipe", "ignore", "pipe", "ipc"],
  });
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
  });
  let dead = false;
  let nextId = 1;
  const pending = new Map<number, (o: InvokeOutcome) => void>();
  const failAll = (message: string) => {
    for (const [id, resolve] of pending) {
      pending.delete(id);
      resolve({ ok: false, crashed: true, error: { name: "Runtime.ExitError", message } });
    }
  };
  child.on("exit", (code, signal) => {
    dead = true;
    failAll(`environment exited (code ${code}, signal ${signal})`);
  });
  child.on("error", () => {});
  child.on("message", (msg: { type: string; id: number } & InvokeOutcome) => {
    if (msg.type !== "result") return;
    const resolve = pending.get(msg.id);
    if (!resolve) return;
    pending.delete(msg.id);
    resolve(msg.ok ? { ok: true, value: msg.value } : { ok: false, crashed: false, error: msg.error });
  });
  await new Promise<void>((resolve, reject) => {
    const onMsg = (m: { type?: string }) => {
      if (m?.type === "ready") {
        child.off("message", onMsg);
        child.off("exit", onExit);
        resolve();
      }
    };
    const onExit = () => reject(new Error(`${spec.name} failed to start:\n${stderr}`));
    child.on("message", onMsg);
    child.once("exit", onExit);
  });
  const timeoutMs = spec.timeoutMs ?? 30_000;
  return {
    pid: child.pid ?? -1,
    get busy() {
      return pending.size > 0;
    },
    get dead() {
      return dead;
    },
    invoke(event) {
      if (dead) {
        return Promise.resolve({
          ok: false,
          crashed: true,
          error: { name: "Runtime.ExitError", message: "environment is dead" },
        });
      }
      const id = nextId++;
      return new Promise<InvokeOutcome>((resolve) => {
        const timer = setTimeout(() => {
          if (!pending.has(id)) return;
          // Lambda kills a timed-out environment.
          spec.onKill?.(child.pid ?? -1, "timeout");
          child.kill("SIGKILL");
        }, timeoutMs + 1_000);
        pending.set(id, (o) => {
          clearTimeout(timer);
          resolve(o);
        });
        child.send({ type: "invoke", id, event, timeoutMs });
      });
    },
    kill() {
      if (dead) return;
      spec.onKill?.(child.pid ?? -1, "killed");
      child.kill("SIGKILL");
    },
  };
}

/**
 * A function with up to `concurrency` environments, each used by one invocation at a time; dead
 * environments are replaced on demand. `kill()` crashes environments from outside.
 */
export interface FunctionPool {
  readonly name: string;
  invoke(event: unknown, onEnvironment?: (env: FunctionEnvironment) => void): Promise<InvokeOutcome>;
  /** Environments running an invocation right now. */
  busyEnvironments(): FunctionEnvironment[];
  readonly stats: { invocations: number; crashes: number; coldStarts: number };
  stop(): Promise<void>;
}

export function createFunctionPool(spec: FunctionSpec, concurrency = 1): FunctionPool {
  const envs: FunctionEnvironment[] = [];
  const idle: FunctionEnvironment[] = [];
  const waiters: Array<() => void> = [];
  let starting = 0;
  let stopped = false;
  const stats = { invocations: 0, crashes: 0, coldStarts: 0 };

  const acquire = async (): Promise<FunctionEnvironment> => {
    for (;;) {
      if (stopped) throw new Error(`${spec.name}: stopped`);
      while (idle.length > 0) {
        const env = idle.pop()!;
        if (!env.dead) return env;
      }
      const live = envs.filter((e) => !e.dead).length;
      if (live + starting < concurrency) {
        starting++;
        try {
          const env = await startEnvironment(spec);
          stats.coldStarts++;
          envs.push(env);
          return env;
        } finally {
          starting--;
        }
      }
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  const release = (env: FunctionEnvironment) => {
    if (!env.dead) idle.push(env);
    else envs.splice(envs.indexOf(env), 1);
    waiters.shift()?.();
  };
  return {
    name: spec.name,
    stats,
    async invoke(event, onEnvironment) {
      const env = await acquire();
      stats.invocations++;
      try {
        onEnvironment?.(env);
        const outcome = await env.invoke(event);
        if (!outcome.ok && outcome.crashed) stats.crashes++;
        return outcome;
      } finally {
        release(env);
      }
    },
    busyEnvironments: () => envs.filter((e) => e.busy && !e.dead),
    async stop() {
      stopped = true;
      for (const w of waiters.splice(0)) w();
      for (const e of envs) e.kill();
      await new Promise((r) => setTimeout(r, 50));
    },
  };
}
