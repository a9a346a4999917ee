/**
 * The Middy wiring both consumers share: one batch-level middleware (reject an event of the wrong
 * shape before any record is touched; publish the batch's EMF metrics whether it succeeded or
 * not) in front of the per-batch function, which gets Middy 7's abort signal.
 */
import middy, { type MiddlewareObj, type MiddyfiedHandler } from "@middy/core";
import type { Context } from "aws-lambda";
import { createTelemetry, type Telemetry, type TelemetryOptions } from "../observability/telemetry.ts";
import { LAMBDA_DEADLINE } from "./lambdaDeadline.ts";

/** A Telemetry as given, or one made from its options. */
export const telemetryOf = (given: Telemetry | TelemetryOptions | undefined): Telemetry =>
  given && "count" in given ? given : createTelemetry(given);

/**
 * `kind` names the hooks (`sqsBatchAssertEvent`, `sqsBatchPublishMetrics`, ...), so Middy's timing
 * hooks (beforeMiddleware / afterMiddleware) can tell them apart.
 */
export function batchMiddleware<E, A>(
  kind: string,
  telemetry: Telemetry,
  assertEvent: (event: unknown) => void,
): MiddlewareObj<E, A, Error, Context> {
  // Returns nothing on purpose: a value returned from a Middy `after` replaces the response (and
  // publishStoredMetrics may return the Metrics instance).
  const publish = {
    [`${kind}BatchPublishMetrics`]: (): void => {
      telemetry.metrics.publishStoredMetrics();
    },
  }[`${kind}BatchPublishMetrics`]!;
  const before = {
    [`${kind}BatchAssertEvent`]: (request: { event: E }): void => {
      assertEvent(request.event);
    },
  }[`${kind}BatchAssertEvent`]!;
  return { before, after: publish, onError: publish };
}

/**
 * The Middy handler: the batch middleware, then the per-batch function with the handler's abort
 * signal. Middy's early timeout is set to `LAMBDA_DEADLINE.middyEarlyMs`, the value the batch's
 * deadlines (`lambdaDeadline.ts`) answer before: it stays a last resort (it fails the batch whole)
 * that leaves the onError middlewares time to publish the metrics.
 */
export function batchHandler<E, A>(
  middleware: MiddlewareObj<E, A, Error, Context>,
  process: (event: E, context: Context, signal: AbortSignal) => Promise<A>,
): MiddyfiedHandler<E, A, Error, Context> {
  return (
    middy<E, A, Error, Context>({ timeoutEarlyInMillis: LAMBDA_DEADLINE.middyEarlyMs })
      .use(middleware)
      // Middy 7 passes its abort signal (aborted just before the Lambda's time is up) to the handler.
      .handler((event, context, { signal }) => process(event, context, signal))
  );
}
