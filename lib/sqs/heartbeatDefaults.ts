/**
 * When the visibility heartbeat beats, as pure numbers: shared by the heartbeat
 * (`visibilityHeartbeat.ts`) and the synth rule that sizes a heartbeat queue (`lib/cdk/rules.ts`),
 * so the default and the rule cannot drift apart. No AWS SDK import: the CDK app reads it too.
 *
 * What the heartbeat is for inside Lambda: Lambda never extends visibility, so without it a queue
 * needs a visibility timeout of 6 × the function timeout, and the records of a crashed invocation
 * stay hidden that long. With it, a queue can run with a visibility timeout as short as the function
 * timeout (Lambda's own minimum for an SQS trigger): the heartbeat keeps every record of a running
 * batch hidden, and a crashed invocation's records come back after one function timeout instead
 * of six. On a queue
 * sized by the 6× rule the visibility part never fires (a third of 6 × the timeout is longer than
 * any invocation); the heartbeat then only renews dedup leases.
 */
export const HEARTBEAT_DEFAULTS = {
  /** The first extension is due this fraction of the visibility timeout after the batch starts. */
  visibilityFraction: 1 / 3,
  /**
   * The source queue (its URL and visibility timeout) is looked up once a batch has run this long
   * (or a third of the remaining time, if sooner), and never for a shorter batch.
   */
  lookupAfterMs: 1_000,
  /** Never beat more often than this. */
  minAfterMs: 300,
  /** Never extend past the remaining Lambda time plus this (a dead invocation lets go soon). */
  marginSeconds: 10,
  /**
   * What a heartbeat queue's visibility timeout must leave for the time between SQS's receive and
   * the first beat, besides the batching window: the poller's invoke (and a throttled retry of it).
   */
  invokeSlackSeconds: 10,
} as const;

/** Default `afterMs` of the heartbeat for a queue whose visibility timeout is `visibilitySeconds`. */
export function defaultHeartbeatAfterMs(visibilitySeconds: number): number {
  return Math.max(
    HEARTBEAT_DEFAULTS.minAfterMs,
    visibilitySeconds * 1000 * HEARTBEAT_DEFAULTS.visibilityFraction,
  );
}

/**
 * The shortest visibility timeout a heartbeat queue may have:
 * - Lambda refuses an SQS event source whose queue's visibility timeout is below the function
 *   timeout;
 * - the record is already hidden for the batching window and the invoke when the batch starts,
 *   and the first beat comes a third of the visibility timeout later, so visibility ≥
 *   3 × (batching window + invoke slack) leaves a third of it as margin for the beat's own call.
 */
export function minimumHeartbeatVisibilitySeconds(
  functionTimeoutSeconds: number,
  batchingWindowSeconds = 0,
): number {
  const firstBeatInTime = Math.ceil(
    (batchingWindowSeconds + HEARTBEAT_DEFAULTS.invokeSlackSeconds) / HEARTBEAT_DEFAULTS.visibilityFraction,
  );
  return Math.max(functionTimeoutSeconds, firstBeatInTime);
}
