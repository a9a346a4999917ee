/**
 * The invocation's deadline as an AbortSignal: it aborts, with an `OutOfTimeError`, when the
 * Lambda's time is up, or earlier when Middy aborts the handler's own signal (Middy 7 passes
 * `(event, context, { signal })`; it aborts just before its early-timeout response). Each record's
 * signal follows it, so a handler can stop a side effect whose outcome nobody would record.
 */
import type { Context } from "aws-lambda";
import { OutOfTimeError } from "../core/errors.ts";

export interface Deadline {
  readonly signal: AbortSignal;
  /** Clears the timer: call when the batch answers. */
  dispose(): void;
}

export function lambdaDeadline(
  context: Pick<Context, "getRemainingTimeInMillis">,
  given?: AbortSignal,
): Deadline {
  const controller = new AbortController();
  const remaining =
    typeof context.getRemainingTimeInMillis === "function" ? context.getRemainingTimeInMillis() : undefined;
  const timer =
    remaining !== undefined && Number.isFinite(remaining)
      ? setTimeout(
          () => controller.abort(new OutOfTimeError("the Lambda invocation ran out of time")),
          Math.max(0, remaining),
        )
      : undefined;
  timer?.unref();
  const onGiven = () => controller.abort(given?.reason ?? new OutOfTimeError("the handler was aborted"));
  if (given?.aborted) onGiven();
  else given?.addEventListener("abort", onGiven, { once: true });
  return {
    signal: controller.signal,
    dispose() {
      if (timer) clearTimeout(timer);
      given?.removeEventListener("abort", onGiven);
    },
  };
}
