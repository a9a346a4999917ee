/** The dedup window rule: a window longer than every way a message can come back. */
import { ConsumerRuleError, formatSeconds, isKnown } from "./ruleError.ts";

/** One way a message can come back to a consumer, and for how long. */
export interface RetryPath {
  /** The consumer (dedup scope) the path belongs to. */
  readonly consumer: string;
  /** E.g. `queue orders: retention 4d + parked in the DLQ 14d + redriven 4d`. */
  readonly description: string;
  /** `undefined` when a duration is a token (unknown at synth): the path is not checked. */
  readonly seconds: number | undefined;
}

/**
 * The dedup window must be longer than the longest way a message can come back, or a late
 * redelivery or a replay is processed a second time. Paths of unknown length (tokens) and a
 * window that is a token are not checked.
 */
export function checkDedupWindow(
  table: string,
  windowSeconds: number,
  paths: readonly RetryPath[],
  path?: string,
): void {
  if (!isKnown(windowSeconds)) return;
  const tooLong = paths.filter(
    (p): p is RetryPath & { seconds: number } => p.seconds !== undefined && p.seconds >= windowSeconds,
  );
  if (tooLong.length === 0) return;
  const longest = Math.max(...tooLong.map((p) => p.seconds));
  const list = tooLong.map(
    (p) => `  - ${p.consumer}: ${p.description} = ${formatSeconds(p.seconds)} (${p.seconds}s)`,
  );
  throw new ConsumerRuleError(
    "DedupWindowTooShort",
    [
      `Dedup table "${table}" remembers keys for ${formatSeconds(windowSeconds)} (${windowSeconds}s), ` +
        `but these consumers can see a message again later than that:`,
      ...list,
      `A redelivery or replay after the dedup record expired is processed twice. Set the table's ` +
        `window above ${longest}s, or shorten the retention / retry ladder / planned replay.`,
    ].join("\n"),
    path,
  );
}

/**
 * A construct validation (run at synth, so retry paths added later count) that fails when the
 * window is not longer than every retry path: the one rule both dedup and inbox tables follow.
 */
export function dedupWindowValidation(
  table: string,
  windowSeconds: () => number,
  paths: () => readonly RetryPath[],
): { validate(): string[] } {
  return {
    validate: () => {
      try {
        checkDedupWindow(table, windowSeconds(), paths());
        return [];
      } catch (error) {
        return [(error as Error).message];
      }
    },
  };
}
