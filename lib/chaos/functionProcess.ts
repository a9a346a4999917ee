/**
 * One Lambda execution environment as a child process, so chaos can kill it with SIGKILL at any
 * instant (a crashed handler: no finally blocks, no flushes, sockets torn down by the kernel).
 * The parent (functionHost.ts) sends `{ type: "invoke", id, event, timeoutMs }` over IPC and gets
 * `{ type: "result", id, ok, value | error }` back. The module, its export and the function's
 * environment come from the parent (CHAOS_FUNCTION_MODULE, CHAOS_FUNCTION_EXPORT, ...).
 */
import { pathToFileURL } from "node:url";
import { lambdaContext } from "../local/lambdaContext.ts";

type Handler = (event: unknown, context: unknown) => Promise<unknown>;
interface InvokeMessage {
  readonly type: "invoke";
  readonly id: number;
  readonly event: unknown;
  readonly timeoutMs: number;
}

const modulePath = process.env.CHAOS_FUNCTION_MODULE;
const exportName = process.env.CHAOS_FUNCTION_EXPORT ?? "handler";
const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME ?? "chaos-function";
if (!modulePath || !process.send) throw new Error("functionProcess: run me through functionHost.ts");

const mod = (await import(pathToFileURL(modulePath).href)) as Record<string, unknown>;
const handler = mod[exportName] as Handler | undefined;
if (typeof handler !== "function") throw new Error(`${modulePath} has no export ${exportName}`);

process.on("message", async (msg: InvokeMessage) => {
  if (msg?.type !== "invoke") return;
  try {
    const value = await handler(msg.event, lambdaContext(functionName, msg.timeoutMs));
    process.send?.({ type: "result", id: msg.id, ok: true, value: value ?? null });
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    process.send?.({ type: "result", id: msg.id, ok: false, error: { name: e.name, message: e.message } });
  }
});
// The handler may hold sockets open; a disconnect from the parent ends us.
process.on("disconnect", () => process.exit(0));
process.send({ type: "ready" });
