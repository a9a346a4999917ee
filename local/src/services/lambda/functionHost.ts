import { randomUUID } from "node:crypto";
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Worker } from "node:worker_threads";
import type { LocalFunction } from "../../runtime/model.ts";

export interface InvokeSuccess {
  readonly ok: true;
  readonly requestId: string;
  readonly value: unknown;
  readonly durationMs: number;
}

export interface InvokeFailure {
  readonly ok: false;
  readonly requestId: string;
  /** `Unhandled` (the function threw), `TimedOut` (killed at its timeout) or `Crashed` (the environment died). */
  readonly kind: "Unhandled" | "TimedOut" | "Crashed";
  readonly errorType: string;
  readonly errorMessage: string;
  readonly durationMs: number;
}

export type InvokeResult = InvokeSuccess | InvokeFailure;

export interface FunctionHostOptions {
  /** Variables every environment gets first (endpoints, region, credentials). */
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Extra variables per function name (after the template's). */
  readonly envOverrides?: (fn: LocalFunction) => Readonly<Record<string, string>> | undefined;
  /** One log file per function here (`<name>.log`). @default - logs go to this process's stderr */
  readonly logDir?: string;
  /** Also copy each function's output to this stream (the CLI prints it with the function's name). */
  readonly logTee?: (fn: LocalFunction) => NodeJS.WritableStream;
  /** Concurrency of a function that no trigger asked for (e.g. only on a schedule). @default 10 */
  readonly defaultConcurrency?: number;
  /** A ceiling on environments per function, to bound memory on small machines. @default - none */
  readonly maxEnvironmentsPerFunction?: number;
  /** Called after every invocation (progress, tests). */
  readonly onInvoke?: (fn: LocalFunction, result: InvokeResult) => void;
  /**
   * Modules every environment imports before the function's code (absolute paths): instrumentation
   * that must live inside the environment, since a worker has its own module instances.
   */
  readonly preload?: readonly string[];
  /** Called when an environment dies under an invocation (killed, crashed or timed out), with its event. */
  readonly onCrash?: (fn: LocalFunction, environmentId: string, reason: string, event: unknown) => void;
}

/** Sees each invocation once it has ended: the function, the event it was given, and its result. */
export type InvocationObserver = (fn: LocalFunction, event: unknown, result: InvokeResult) => void;

/** An environment running an invocation now (see `FunctionHost.busyEnvironments`). */
export interface BusyEnvironment {
  readonly id: string;
  readonly requestId: string;
  readonly event: unknown;
  /** Terminates the environment mid-invocation: the invocation fails as `Crashed`. */
  kill(reason?: string): void;
}

interface Environment {
  readonly worker: Worker;
  readonly id: string;
  busy: boolean;
  dead: boolean;
  kill?: (reason: string) => void;
  pending?: {
    requestId: string;
    event: unknown;
    initialised: () => void;
    resolve: (
      r:
        | { ok: true; value: unknown }
        | { ok: false; errorType: string; errorMessage: string; crashed?: boolean },
    ) => void;
  };
}

interface Pool {
  readonly fn: LocalFunction;
  readonly envs: Environment[];
  readonly waiters: Array<() => void>;
  limit: number;
  demand: number;
  log: NodeJS.WritableStream;
  invocations: number;
  inFlight: number;
  coldStarts: number;
}

export interface FunctionStats {
  readonly name: string;
  readonly invocations: number;
  readonly inFlight: number;
  readonly environments: number;
  readonly coldStarts: number;
  readonly concurrencyLimit: number;
}

/** Local ceiling of the init phase (module load), separate from the function timeout. */
const INIT_TIMEOUT_MS = 120_000;

/** The worker's module next to this one: `.ts` from the sources, `.js` in the built package. */
const WORKER_URL = new URL(
  `./functionWorker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`,
  import.meta.url,
);

/**
 * The parent's Node flags without tsx's loader hooks (`--require …/tsx/…`, `--import …/tsx/…`).
 * The worker module runs on Node's own type stripping and the functions are bundled JavaScript,
 * so an environment needs no TypeScript loader; with tsx's hooks inherited, every module of a
 * function bundle went through them at each cold start (a CPU profile of `npm run local` put 38 s
 * of its 278 s in tsx; without the hooks it took 206 s, garbage collection 12 s instead of 28 s).
 * Preloads may be TypeScript that only tsx resolves (the chaos suite's), so with preloads the flags
 * are kept as they are.
 */
export function withoutTsxHooks(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    const [flag, inline] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag === "--require" || flag === "-r" || flag === "--import" || flag === "--loader") {
      const value = inline ?? execArgv[i + 1] ?? "";
      if (inline === undefined) i++;
      if (/[/]tsx[/]/.test(value)) continue;
      out.push(flag, value);
      continue;
    }
    out.push(arg);
  }
  return out;
}

/**
 * Runs functions like Lambda does: each execution environment is a worker thread with the
 * function's own environment variables and module state, handling one invocation at a time; warm
 * environments are reused; a function gets new environments on demand up to its concurrency limit
 * (reserved concurrency, else the limit its triggers ask for, else `defaultConcurrency`), and
 * further invocations wait for a free one (Lambda would throttle and the poller retry). An
 * invocation that outlives the function's timeout is failed and its environment discarded.
 */
export class FunctionHost {
  readonly #pools = new Map<string, Pool>();
  readonly #options: FunctionHostOptions;
  readonly #streams: WriteStream[] = [];
  readonly #observers = new Set<InvocationObserver>();
  #stopped = false;

  constructor(functions: readonly LocalFunction[], options: FunctionHostOptions) {
    this.#options = options;
    if (options.logDir) mkdirSync(options.logDir, { recursive: true });
    for (const fn of functions) {
      let log: NodeJS.WritableStream = process.stderr;
      if (options.logDir) {
        const s = createWriteStream(join(options.logDir, `${fn.name}.log`), { flags: "a" });
        this.#streams.push(s);
        log = s;
      }
      const tee = options.logTee?.(fn);
      if (tee) log = teeStream(log, tee);
      const pool: Pool = {
        fn,
        envs: [],
        waiters: [],
        limit: 0,
        demand: 0,
        log,
        invocations: 0,
        inFlight: 0,
        coldStarts: 0,
      };
      pool.limit = this.#limitOf(fn, 0);
      this.#pools.set(fn.name, pool);
    }
  }

  /**
   * A trigger declares how many invocations it may run at once; a function's limit is the sum of
   * its triggers' demands (Lambda's concurrency is per function), capped by its reserved
   * concurrency and by `maxEnvironmentsPerFunction`.
   */
  requestConcurrency(functionName: string, concurrency: number): void {
    const pool = this.#pool(functionName);
    pool.demand += concurrency;
    pool.limit = this.#limitOf(pool.fn, pool.demand);
  }

  #limitOf(fn: LocalFunction, demand: number): number {
    const cap = Math.min(
      fn.reservedConcurrency ?? Number.POSITIVE_INFINITY,
      this.#options.maxEnvironmentsPerFunction ?? Number.POSITIVE_INFINITY,
    );
    return Math.max(1, Math.min(cap, demand > 0 ? demand : (this.#options.defaultConcurrency ?? 10)));
  }

  functionNamed(name: string): LocalFunction {
    return this.#pool(name).fn;
  }

  /** Writes a line of the runtime's own into a function's log stream (a denied call, say). */
  log(functionName: string, line: string): void {
    this.#pools.get(functionName)?.log.write(`${new Date().toISOString()}\t${line}\n`);
  }

  stats(): FunctionStats[] {
    return [...this.#pools.values()].map((p) => ({
      name: p.fn.name,
      invocations: p.invocations,
      inFlight: p.inFlight,
      environments: p.envs.filter((e) => !e.dead).length,
      coldStarts: p.coldStarts,
      concurrencyLimit: p.limit,
    }));
  }

  /** The environments of a function that are running an invocation, with a way to crash each. */
  busyEnvironments(functionName: string): BusyEnvironment[] {
    const out: BusyEnvironment[] = [];
    for (const e of this.#pool(functionName).envs) {
      const p = e.pending;
      if (!p || e.dead) continue;
      out.push({
        id: e.id,
        requestId: p.requestId,
        event: p.event,
        kill: (reason = "killed") => e.kill?.(reason),
      });
    }
    return out;
  }

  /** Called after each invocation with its event and result (the local console's trace). @returns unsubscribe */
  observeInvocations(observer: InvocationObserver): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }

  /** Invocations running now, all functions. */
  inFlight(): number {
    let n = 0;
    for (const p of this.#pools.values()) n += p.inFlight;
    return n;
  }

  /** A synchronous invocation (what event source mappings do). */
  async invoke(functionName: string, event: unknown): Promise<InvokeResult> {
    const pool = this.#pool(functionName);
    pool.inFlight++;
    try {
      const env = await this.#acquire(pool);
      const requestId = randomUUID();
      const started = performance.now();
      const timeoutMs = pool.fn.timeoutSeconds * 1000;
      pool.invocations++;
      const outcome = await new Promise<
        | { ok: true; value: unknown }
        | { ok: false; errorType: string; errorMessage: string; crashed?: boolean; timedOut?: boolean }
      >((resolve) => {
        const expire = (what: string, seconds: number) => () => {
          env.pending = undefined;
          resolve({
            ok: false,
            timedOut: true,
            errorType: "Sandbox.Timedout",
            errorMessage: `${what} after ${seconds.toFixed(2)} seconds`,
          });
          pool.log.write(`${new Date().toISOString()} ${requestId} ${what} after ${seconds} seconds\n`);
          this.#options.onCrash?.(pool.fn, env.id, `${what} after ${seconds} seconds`, event);
          this.#discard(pool, env);
        };
        // Lambda's init phase does not count against the function timeout; the timer starts when
        // the module is loaded (a cold start on a busy machine can take seconds).
        let timer = setTimeout(expire("Init timed out", INIT_TIMEOUT_MS / 1000), INIT_TIMEOUT_MS);
        env.pending = {
          requestId,
          event,
          initialised: () => {
            clearTimeout(timer);
            timer = setTimeout(expire("Task timed out", pool.fn.timeoutSeconds), timeoutMs);
          },
          resolve: (r) => {
            clearTimeout(timer);
            env.pending = undefined;
            resolve(r);
          },
        };
        env.worker.postMessage({ type: "invoke", requestId, timeoutMs, event });
      });
      const durationMs = performance.now() - started;
      this.#release(pool, env);
      const result: InvokeResult = outcome.ok
        ? { ok: true, requestId, value: outcome.value, durationMs }
        : {
            ok: false,
            requestId,
            kind:
              "timedOut" in outcome && outcome.timedOut
                ? "TimedOut"
                : outcome.crashed
                  ? "Crashed"
                  : "Unhandled",
            errorType: outcome.errorType,
            errorMessage: outcome.errorMessage,
            durationMs,
          };
      this.#options.onInvoke?.(pool.fn, result);
      for (const observe of this.#observers) observe(pool.fn, event, result);
      return result;
    } finally {
      pool.inFlight--;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const all: Promise<unknown>[] = [];
    for (const pool of this.#pools.values()) {
      for (const w of pool.waiters.splice(0)) w();
      for (const env of pool.envs) {
        env.dead = true;
        all.push(env.worker.terminate());
      }
      pool.envs.length = 0;
    }
    await Promise.allSettled(all);
    await Promise.all(this.#streams.map((s) => new Promise<void>((r) => s.end(r))));
  }

  #pool(name: string): Pool {
    const pool = this.#pools.get(name);
    if (!pool) throw new Error(`no local function ${name}`);
    return pool;
  }

  async #acquire(pool: Pool): Promise<Environment> {
    for (;;) {
      if (this.#stopped) throw new Error("the function host is stopped");
      const idle = pool.envs.find((e) => !e.busy && !e.dead);
      if (idle) {
        idle.busy = true;
        return idle;
      }
      if (pool.envs.length < pool.limit) {
        const env = this.#spawn(pool);
        env.busy = true;
        return env;
      }
      await new Promise<void>((resolve) => pool.waiters.push(resolve));
    }
  }

  #release(pool: Pool, env: Environment): void {
    env.busy = false;
    pool.waiters.shift()?.();
  }

  #discard(pool: Pool, env: Environment): void {
    if (env.dead) return;
    env.dead = true;
    const i = pool.envs.indexOf(env);
    if (i >= 0) pool.envs.splice(i, 1);
    void env.worker.terminate();
    pool.waiters.shift()?.();
  }

  #spawn(pool: Pool): Environment {
    const fn = pool.fn;
    const id = randomUUID().replaceAll("-", "");
    const logStreamName = `${new Date().toISOString().slice(0, 10).replaceAll("-", "/")}/[$LATEST]${id}`;
    const env = {
      ...this.#options.baseEnv,
      AWS_LAMBDA_FUNCTION_NAME: fn.name,
      AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMb),
      AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${fn.name}`,
      AWS_LAMBDA_LOG_STREAM_NAME: logStreamName,
      AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
      AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
      LAMBDA_TASK_ROOT: fn.codeFile.slice(0, fn.codeFile.lastIndexOf("/")),
      _HANDLER: fn.handler,
      TZ: ":UTC",
      ...fn.environment,
      ...this.#options.envOverrides?.(fn),
    };
    const preload = this.#options.preload ?? [];
    const worker = new Worker(WORKER_URL, {
      env,
      ...(preload.length === 0 ? { execArgv: withoutTsxHooks(process.execArgv) } : {}),
      stdout: true,
      stderr: true,
      workerData: {
        codeFile: fn.codeFile,
        exportName: fn.exportName,
        functionName: fn.name,
        functionArn: fn.arn,
        memoryMb: fn.memoryMb,
        logGroupName: `/aws/lambda/${fn.name}`,
        logStreamName,
        preload,
      },
      resourceLimits: { maxOldGenerationSizeMb: Math.max(128, fn.memoryMb) },
    });
    worker.stdout.on("data", (d: Buffer) => pool.log.write(d));
    worker.stderr.on("data", (d: Buffer) => pool.log.write(d));
    const e: Environment = { worker, id, busy: false, dead: false };
    worker.on(
      "message",
      (msg: {
        type: string;
        requestId: string;
        ok: boolean;
        value?: unknown;
        error?: { errorType: string; errorMessage: string };
      }) => {
        if (e.pending?.requestId !== msg.requestId) return;
        if (msg.type === "initialised") return e.pending.initialised();
        if (msg.type !== "result") return;
        e.pending.resolve(
          msg.ok
            ? { ok: true, value: msg.value }
            : { ok: false, errorType: msg.error!.errorType, errorMessage: msg.error!.errorMessage },
        );
      },
    );
    const die = (reason: string) => {
      if (e.pending) {
        this.#options.onCrash?.(pool.fn, id, reason, e.pending.event);
        e.pending.resolve({ ok: false, crashed: true, errorType: "Runtime.ExitError", errorMessage: reason });
      }
      this.#discard(pool, e);
    };
    // A crash on demand (fault injection): the environment dies mid-invocation, the next one is cold.
    e.kill = (reason) => {
      if (e.dead) return;
      pool.log.write(`${new Date().toISOString()} environment ${id} killed: ${reason}\n`);
      die(`RequestId: ${e.pending?.requestId ?? "-"} Error: Runtime exited: ${reason}`);
    };
    worker.on("error", (err) => {
      pool.log.write(`${new Date().toISOString()} environment ${id} crashed: ${err.stack ?? err.message}\n`);
      die(`RequestId: ${e.pending?.requestId ?? "-"} Error: Runtime exited with error: ${err.message}`);
    });
    worker.on("exit", (code) => {
      if (!e.dead) die(`Runtime exited with status ${code}`);
    });
    pool.envs.push(e);
    pool.coldStarts++;
    return e;
  }
}

/** A stream that writes every chunk to both streams. */
function teeStream(a: NodeJS.WritableStream, b: NodeJS.WritableStream): NodeJS.WritableStream {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      a.write(chunk);
      b.write(chunk);
      done();
    },
  });
}
