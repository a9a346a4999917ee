/**
 * Exponential backoff with full jitter: the delay doubles from `baseSeconds` per attempt, capped at
 * `maxSeconds`.
 */
export interface BackoffPolicy {
  /** Delay before the first retry. @default 2 s */
  readonly baseSeconds: number;
  /** The cap on any single delay. @default 900 s (SQS's own maximum message delay) */
  readonly maxSeconds: number;
}

/** The SQS consumer's visibility backoff: base 2 s, cap 900 s. */
export const DEFAULT_BACKOFF: BackoffPolicy = { baseSeconds: 2, maxSeconds: 900 };

/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter"):
 * a uniform delay in [0, min(cap, base * 2^(attempt-1))]. `attempt` is 1 for the first failure.
 * `random` is injectable so the decision is testable.
 */
export function fullJitterDelaySeconds(
  attempt: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 30);
  const ceiling = Math.min(policy.maxSeconds, policy.baseSeconds * 2 ** exponent);
  return Math.round(random() * ceiling);
}
