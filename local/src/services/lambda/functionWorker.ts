/**
 * One Lambda execution environment: a worker thread with its own module state and environment
 * variables. It loads the function's bundled module on the first invocation (the cold start) and
 * runs one invocation at a time, like Lambda. Self-contained on purpose (only `node:` imports):
 * Node 24 runs it with native type stripping, with or without tsx.
 */
import { setSourceMapsEnabled } from "node:process";
import { pathToFileURL } from "node:url";
import { parentPort, workerData } from "node:worker_threads";

interface WorkerConfig {
  readonly codeFile: string;
  readonly exportName: string;
  readonly functionName: string;
  readonly functionArn: string;
  readonly memoryMb: number;
  readonly logGroupName: string;
  readonly logStreamName: string;
  /** Modules to import before the function's code (instrumentation inside this environment). */
  readonly preload?: readonly string[];
}

interface InvokeMessage {
  readonly type: "invoke";
  readonly requestId: string;
  /** The function timeout; the deadline starts after the init phase, as in Lambda. */
  readonly timeoutMs: number;
  readonly event: unknown;
}

type Handler = (event: unknown, context: unknown) => Promise<unknown> | unknown;

const config = workerData as WorkerConfig;
if ((process.env.NODE_OPTIONS ?? "").includes("--enable-source-maps")) setSourceMapsEnabled(true);
let handler: Handler | undefined;
let initMs = 0;

async function load(): Promise<Handler> {
  if (handler) return handler;
  const started = performance.now();
  for (const p of config.preload ?? []) await import(pathToFileURL(p).href);
  const mod = (await import(pathToFileURL(config.codeFile).href)) as Record<string, unknown>;
  const fn =
    mod[config.exportName] ?? (mod.default as Record<string, unknown> | undefined)?.[config.exportName];
  if (typeof fn !== "function") {
    throw Object.assign(new Error(`${config.codeFile} does not export a function "${config.exportName}"`), {
      name: "Runtime.HandlerNotFound",
    });
  }
  handler = fn as Handler;
  initMs = performance.now() - started;
  return handler;
}

function serialiseError(error: unknown): { errorType: string; errorMessage: string; stackTrace: string[] } {
  const e = error instanceof Error ? error : new Error(String(error));
  return { errorType: e.name, errorMessage: e.message, stackTrace: (e.stack ?? "").split("\n").slice(1) };
}

parentPort!.on("message", async (msg: InvokeMessage) => {
  if (msg.type !== "invoke") return;
  let deadline = Date.now() + msg.timeoutMs;
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: config.functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: config.functionArn,
    memoryLimitInMB: String(config.memoryMb),
    awsRequestId: msg.requestId,
    logGroupName: config.logGroupName,
    logStreamName: config.logStreamName,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
  const cold = handler === undefined;
  const started = performance.now();
  process.stdout.write(`START RequestId: ${msg.requestId} Version: $LATEST\n`);
  try {
    const fn = await load();
    deadline = Date.now() + msg.timeoutMs;
    parentPort!.postMessage({ type: "initialised", requestId: msg.requestId });
    const value = await fn(msg.event, context);
    parentPort!.postMessage({ type: "result", requestId: msg.requestId, ok: true, value: value ?? null });
  } catch (error) {
    const e = serialiseError(error);
    process.stdout.write(
      `${new Date().toISOString()}\t${msg.requestId}\tERROR\tInvoke Error\t${JSON.stringify(e)}\n`,
    );
    parentPort!.postMessage({ type: "result", requestId: msg.requestId, ok: false, error: e });
  } finally {
    const ms = performance.now() - started;
    process.stdout.write(
      `END RequestId: ${msg.requestId}\nREPORT RequestId: ${msg.requestId}\tDuration: ${ms.toFixed(2)} ms\t` +
        `Memory Size: ${config.memoryMb} MB${cold ? `\tInit Duration: ${initMs.toFixed(2)} ms` : ""}\n`,
    );
  }
});
