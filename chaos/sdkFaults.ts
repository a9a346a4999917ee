import type {
  DeserializeHandler,
  DeserializeHandlerArguments,
  HandlerExecutionContext,
  MiddlewareStack,
} from "@smithy/types";
import { decideFault, type FaultLedger, type FaultPlan, faultResponse, recordFault } from "./faults.ts";
import type { Rng } from "./rng.ts";

/** Any AWS SDK v3 client (DynamoDBClient, SQSClient, DynamoDBStreamsClient, ...). */
// biome-ignore lint/suspicious/noExplicitAny: the SDK's client generics differ per service
type AnySdkClient = { middlewareStack: MiddlewareStack<any, any> };

export interface SdkFaultOptions {
  readonly plan: FaultPlan;
  readonly rng: Rng;
  readonly ledger: FaultLedger;
  /** Names the client in the ledger (`dynamodb`, `sqs`, ...). */
  readonly target: string;
  /** Turn injection off and on during a run. @default always on */
  readonly enabled?: () => boolean;
}

const MIDDLEWARE_NAME = "chaosFaultInjection";

/**
 * Injects faults into a real SDK client, as an SDK middleware at the `deserialize` step with low
 * priority: it sits between the deserializer and the HTTP handler, inside the SDK's retry loop.
 *
 * - `throttle` / `server` return a fabricated HTTP error response, which the SDK's own deserializer
 *   turns into the typed exception (ThrottlingException, 500) and its retry strategy retries: the
 *   code under test sees exactly what it would see from AWS once the SDK's retries run out.
 * - `reset` throws ECONNRESET before anything is sent.
 * - `timeout` sends the request (the service applies it), discards the response and throws a
 *   TimeoutError: the SDK retries a request that already happened.
 *
 * Returns a function that removes the middleware.
 */
export function injectSdkFaults(client: AnySdkClient, options: SdkFaultOptions): () => void {
  const { plan, rng, ledger, target } = options;
  client.middlewareStack.add(
    // biome-ignore lint/suspicious/noExplicitAny: see AnySdkClient
    (next: DeserializeHandler<any, any>, context: HandlerExecutionContext) =>
      // biome-ignore lint/suspicious/noExplicitAny: see AnySdkClient
      async (args: DeserializeHandlerArguments<any>) => {
        const operation =
          (context as { commandName?: string }).commandName?.replace(/Command$/, "") ?? "unknown";
        if (options.enabled && !options.enabled()) return next(args);
        const kind = decideFault(plan, rng, operation);
        if (kind === undefined) return next(args);
        recordFault(ledger, kind, `${target}:${operation}`);
        if (kind === "reset") {
          throw Object.assign(new Error(`read ECONNRESET (chaos: ${target} ${operation})`), {
            code: "ECONNRESET",
          });
        }
        if (kind === "timeout") {
          const applied = await next(args);
          // Drain the real body so the socket goes back to the pool, then lose the answer.
          const body = (applied.response as { body?: { resume?: () => void } } | undefined)?.body;
          body?.resume?.();
          throw Object.assign(
            new Error(`Request timed out after the service applied it (chaos: ${target} ${operation})`),
            {
              name: "TimeoutError",
            },
          );
        }
        const fault = faultResponse(kind);
        return {
          response: {
            statusCode: fault.statusCode,
            reason: kind === "throttle" ? "Bad Request" : "Internal Server Error",
            headers: {
              "content-type": "application/x-amz-json-1.0",
              "x-amzn-errortype": fault.errorType,
              "x-amzn-requestid": `chaos-${Date.now()}`,
            },
            body: new TextEncoder().encode(fault.body),
          },
          output: undefined,
        } as unknown as Awaited<ReturnType<typeof next>>;
      },
    { step: "deserialize", priority: "low", name: MIDDLEWARE_NAME, override: true },
  );
  return () => {
    client.middlewareStack.remove(MIDDLEWARE_NAME);
  };
}
