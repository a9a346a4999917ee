/**
 * A partition held while something its records need refuses: the on-failure destination (the
 * cluster away) or the schema registry (unreachable). Nothing past those records may be committed,
 * so the call is retried with the stream backoff (0.2 s doubling, at most 5 s, as streamMapping.ts
 * retries an invocation) until it answers, or the partition is no longer this member's to process.
 */

/** What a held call came to: its answer, or `done: false` when the hold was given up first. */
export type Held<T> = { readonly done: true; readonly value: T } | { readonly done: false };

/** How a held call is retried. */
export interface Hold {
  /** The mapping stopped or the partition was revoked: give up (checked before every attempt). */
  stopped(): boolean;
  /** Waits between attempts (ends early when the mapping stops). */
  pause(ms: number): Promise<void>;
  /** Told of the first refusal only, so a long hold warns once. */
  refused(error: Error): void;
}

/** The wait before retrying after attempt `attempt` (0-based) failed, in ms: 200 doubling, at most 5,000. */
export const holdBackoffMs = (attempt: number): number => Math.min(5_000, 200 * 2 ** Math.min(attempt, 5));

/** Calls `call` until it answers or `hold.stopped()`. */
export async function retryHolding<T>(call: () => Promise<T>, hold: Hold): Promise<Held<T>> {
  for (let attempt = 0; !hold.stopped(); attempt++) {
    try {
      return { done: true, value: await call() };
    } catch (error) {
      if (attempt === 0) hold.refused(error as Error);
      await hold.pause(holdBackoffMs(attempt));
    }
  }
  return { done: false };
}
