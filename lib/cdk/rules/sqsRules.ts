/** The SQS rules: the visibility timeout, the queue and its DLQ, the trigger, the retry path. */

import { Token } from "aws-cdk-lib";
import { minimumHeartbeatVisibilitySeconds } from "../../sqs/heartbeatDefaults.ts";
import { QUEUE_NAME_PATTERN, SQS_LIMITS } from "../../sqs/sqsLimits.ts";
import { type ProvisionedPollers, pollersFit } from "./pollers.ts";
import { ConsumerRuleError, formatSeconds, isKnown } from "./ruleError.ts";

/**
 * Lambda never extends an SQS message's visibility. AWS recommends a visibility timeout of at
 * least 6 × the function timeout; the batching window adds to the time a message can sit in a
 * poller's batch before the function even starts.
 */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/** The visibility timeout a queue needs: 6 × the function timeout, plus the batching window. */
export function requiredVisibilityTimeoutSeconds(
  functionTimeoutSeconds: number,
  batchingWindowSeconds = 0,
): number {
  return VISIBILITY_TIMEOUT_FACTOR * functionTimeoutSeconds + batchingWindowSeconds;
}

/** What `checkVisibilityTimeout` checks. */
export interface VisibilityCheck {
  readonly queue: string;
  readonly visibilityTimeoutSeconds: number;
  readonly consumer: string;
  readonly functionTimeoutSeconds: number;
  readonly batchingWindowSeconds?: number;
  /**
   * The consumer keeps its records hidden with the visibility heartbeat (a queue sized for it,
   * `QueueWithDlq` `visibilityHeartbeat`): the visibility timeout may then be far shorter than the
   * function timeout. @default false
   */
  readonly heartbeat?: boolean;
  /** The construct path to report. @default - none */
  readonly path?: string;
}

/**
 * Throws unless the queue keeps a message hidden while its consumer may still work on it:
 * - without the heartbeat, visibility ≥ 6 × function timeout + batching window (≤ 12 h);
 * - with the heartbeat, visibility ≥ `minimumHeartbeatVisibilitySeconds(timeout, window)`: at least
 *   the function timeout (Lambda's minimum), and long enough that the first beat (a third of the
 *   visibility timeout after the batch starts, the heartbeat's default) lands before the message
 *   could reappear; the heartbeat then keeps it hidden for as long as the invocation runs.
 */
export function checkVisibilityTimeout(c: VisibilityCheck): void {
  const window = c.batchingWindowSeconds ?? 0;
  if (!isKnown(c.visibilityTimeoutSeconds, c.functionTimeoutSeconds, window)) return;
  if (c.heartbeat) {
    const minimum = minimumHeartbeatVisibilitySeconds(c.functionTimeoutSeconds, window);
    if (c.visibilityTimeoutSeconds < minimum) {
      throw new ConsumerRuleError(
        "HeartbeatVisibilityTooShort",
        `Queue "${c.queue}" is sized for the visibility heartbeat but its visibility timeout of ` +
          `${formatSeconds(c.visibilityTimeoutSeconds)} (${c.visibilityTimeoutSeconds}s) is below max(function timeout ` +
          `(${formatSeconds(c.functionTimeoutSeconds)}), 3 × (batching window (${formatSeconds(window)}) + invoke slack)) = ` +
          `${formatSeconds(minimum)} (${minimum}s). Lambda refuses an SQS trigger whose visibility timeout is below the ` +
          `function timeout, and the heartbeat's first beat, a third of the visibility timeout after the batch starts, ` +
          `could come after "${c.consumer}"'s records were handed to another invocation. Raise the visibility timeout ` +
          `(or leave it unset so QueueWithDlq derives it from consumerTimeout).`,
        c.path,
      );
    }
    return;
  }
  const required = requiredVisibilityTimeoutSeconds(c.functionTimeoutSeconds, window);
  if (required > SQS_LIMITS.maxVisibilitySeconds) {
    throw new ConsumerRuleError(
      "VisibilityTimeoutAboveMaximum",
      `Consumer "${c.consumer}" of queue "${c.queue}": ${VISIBILITY_TIMEOUT_FACTOR} × timeout ` +
        `(${formatSeconds(c.functionTimeoutSeconds)}) + batching window (${formatSeconds(window)}) = ` +
        `${formatSeconds(required)} exceeds SQS's maximum visibility timeout of 12h. Shorten the function timeout, ` +
        `or size the queue for the visibility heartbeat (QueueWithDlq visibilityHeartbeat).`,
      c.path,
    );
  }
  if (c.visibilityTimeoutSeconds < required) {
    throw new ConsumerRuleError(
      "VisibilityTimeoutTooShort",
      `Queue "${c.queue}" has a visibility timeout of ${formatSeconds(c.visibilityTimeoutSeconds)} (${c.visibilityTimeoutSeconds}s), ` +
        `but its consumer "${c.consumer}" needs at least ${VISIBILITY_TIMEOUT_FACTOR} × function timeout ` +
        `(${formatSeconds(c.functionTimeoutSeconds)}) + batching window (${formatSeconds(window)}) = ` +
        `${formatSeconds(required)} (${required}s). Lambda never extends visibility, so a shorter timeout ` +
        `lets SQS hand a message to a second invocation while the first still works on it. ` +
        `Raise the queue's visibility timeout (or leave it unset so QueueWithDlq derives it from consumerTimeout), ` +
        `lower the function timeout, or size the queue for the visibility heartbeat (visibilityHeartbeat).`,
      c.path,
    );
  }
}

/**
 * The fewest receives a FIFO queue of a consumer may allow. A record that did not fail (held by
 * another invocation's lease, or not started for lack of time) still uses a receive each time it
 * goes back. On a standard queue the consumer sends it again as a fresh copy on its last receive;
 * on FIFO a copy would go behind its group's later messages, so it is parked with its context
 * instead. With fewer than 3 receives such a record would be parked on its first or second
 * contention, never having failed.
 */
export const MIN_FIFO_RECEIVE_COUNT = 3;

/** What `QueueWithDlq` appends to its queue's name to name the DLQ (before `.fifo`). */
export const DLQ_NAME_SUFFIX = "-dlq";
/** What SQS requires at the end of a FIFO queue's name. */
export const FIFO_NAME_SUFFIX = ".fifo";

/**
 * The longest `queueName` a `QueueWithDlq` takes: its DLQ, `<name>-dlq` (`<name>-dlq.fifo` on FIFO),
 * must fit SQS's 80 characters too. 76 on a standard queue, 71 on a FIFO one.
 */
export function maxQueueNameLength(fifo: boolean): number {
  return SQS_LIMITS.maxQueueNameLength - DLQ_NAME_SUFFIX.length - (fifo ? FIFO_NAME_SUFFIX.length : 0);
}

/**
 * Throws on a `queueName` SQS would refuse for the queue or for its DLQ (at deploy, otherwise):
 * a character other than alphanumerics, `-` and `_`, or a DLQ name past 80 characters. A name that
 * is a token is not checked. Checked rather than shortened: the DLQ keeps the name operators and
 * the redrive tool look for, `<name>-dlq`, and the fix is a shorter name.
 */
export function checkQueueName(q: {
  readonly queueName: string;
  readonly fifo: boolean;
  readonly path?: string;
}): void {
  const { queueName: name, fifo } = q;
  if (Token.isUnresolved(name)) return;
  const suffix = fifo ? FIFO_NAME_SUFFIX : "";
  if (!QUEUE_NAME_PATTERN.test(name)) {
    throw new ConsumerRuleError(
      "QueueNameInvalid",
      `queueName '${name}' may hold only letters, digits, '-' and '_' (SQS's rule)` +
        (fifo && name.endsWith(FIFO_NAME_SUFFIX) ? "; leave out '.fifo': it is appended for you" : ""),
      q.path,
    );
  }
  const longest = maxQueueNameLength(fifo);
  if (name.length > longest) {
    const dlq = `${name}${DLQ_NAME_SUFFIX}${suffix}`;
    throw new ConsumerRuleError(
      "QueueNameTooLong",
      `queueName '${name}' is ${name.length} characters: its DLQ '${dlq}' would be ${dlq.length}, over ` +
        `SQS's ${SQS_LIMITS.maxQueueNameLength} for a queue name${fifo ? " ('.fifo' included)" : ""}. ` +
        `Give a queueName of at most ${longest} characters${fifo ? " on a FIFO queue" : ""}, ` +
        "or none (a unique name that fits is derived).",
      q.path,
    );
  }
}

/** What `checkQueueWithDlq` checks. */
export interface QueueCheck {
  readonly fifo: boolean;
  readonly maxReceiveCount: number;
  readonly retentionSeconds: number;
  readonly dlqRetentionSeconds: number;
  readonly path?: string;
}

/** Throws on a queue/DLQ pair that SQS refuses or that would drop dead letters early. */
export function checkQueueWithDlq(q: QueueCheck): void {
  if (isKnown(q.maxReceiveCount)) {
    if (
      !Number.isInteger(q.maxReceiveCount) ||
      q.maxReceiveCount < 1 ||
      q.maxReceiveCount > SQS_LIMITS.maxReceiveCount
    ) {
      throw new ConsumerRuleError(
        "MaxReceiveCountOutOfRange",
        `maxReceiveCount must be an integer from 1 to ${SQS_LIMITS.maxReceiveCount}, got ${q.maxReceiveCount}`,
        q.path,
      );
    }
    if (q.fifo && q.maxReceiveCount < MIN_FIFO_RECEIVE_COUNT) {
      throw new ConsumerRuleError(
        "FifoReceiveHeadroomTooSmall",
        `a FIFO queue needs maxReceiveCount ≥ ${MIN_FIFO_RECEIVE_COUNT}, got ${q.maxReceiveCount}: a ` +
          "record held by another invocation or not started for lack of time uses a receive each " +
          "time, and on FIFO it is parked on its last one (a fresh copy would break its group's order)",
        q.path,
      );
    }
  }
  for (const [what, seconds] of [
    ["retention", q.retentionSeconds],
    ["DLQ retention", q.dlqRetentionSeconds],
  ] as const) {
    if (
      isKnown(seconds) &&
      (seconds < SQS_LIMITS.minRetentionSeconds || seconds > SQS_LIMITS.maxRetentionSeconds)
    ) {
      throw new ConsumerRuleError(
        "RetentionOutOfRange",
        `${what} must be from 1 minute to 14 days (SQS's limits), got ${formatSeconds(seconds)}`,
        q.path,
      );
    }
  }
  if (
    !q.fifo &&
    isKnown(q.retentionSeconds, q.dlqRetentionSeconds) &&
    q.dlqRetentionSeconds < q.retentionSeconds
  ) {
    throw new ConsumerRuleError(
      "DlqRetentionShorterThanQueue",
      `DLQ retention (${formatSeconds(q.dlqRetentionSeconds)}) is shorter than the ` +
        `queue's (${formatSeconds(q.retentionSeconds)}). On a standard queue a message's expiry counts ` +
        `from its original enqueue time, so dead-lettered messages would expire almost at once.`,
      q.path,
    );
  }
}

/** The SQS event source's limits. */
export const SQS_TRIGGER_LIMITS = {
  /** Standard queues: up to 10,000 per batch (above 10 only with a batching window). */
  maxBatchSize: 10_000,
  /** FIFO queues: up to 10 per batch, and no batching window. */
  maxFifoBatchSize: 10,
  maxBatchingWindowSeconds: 300,
  minConcurrency: 2,
  maxConcurrency: 1000,
  /**
   * Provisioned mode (ProvisionedPollerConfig, Lambda API reference): 2 ≤ MinimumPollers ≤ 200,
   * MinimumPollers ≤ MaximumPollers ≤ 10,000. Mutually exclusive with MaximumConcurrency ("Configuring
   * scaling behavior for SQS event source mappings").
   */
  minPollers: 2,
  maxMinimumPollers: 200,
  maxMaximumPollers: 10_000,
} as const;

/** What `checkSqsTrigger` checks. */
export interface SqsTriggerCheck {
  readonly fifo: boolean;
  readonly batchSize: number;
  readonly batchingWindowSeconds: number;
  readonly maxConcurrency?: number;
  /** Provisioned mode. @default - none (Lambda scales the pollers itself) */
  readonly provisionedPollers?: ProvisionedPollers;
  readonly path?: string;
}

/** Throws on an SQS trigger that Lambda refuses (batch size, window, maximum concurrency). */
export function checkSqsTrigger(t: SqsTriggerCheck): void {
  const L = SQS_TRIGGER_LIMITS;
  const max = t.fifo ? L.maxFifoBatchSize : L.maxBatchSize;
  if (isKnown(t.batchSize) && (!Number.isInteger(t.batchSize) || t.batchSize < 1 || t.batchSize > max)) {
    throw new ConsumerRuleError(
      "SqsBatchSizeOutOfRange",
      t.fifo
        ? `a FIFO queue trigger takes batches of at most 10, got ${t.batchSize}`
        : `an SQS trigger takes batches of 1 to ${max}, got ${t.batchSize}`,
      t.path,
    );
  }
  if (isKnown(t.batchingWindowSeconds)) {
    if (t.batchingWindowSeconds < 0 || t.batchingWindowSeconds > L.maxBatchingWindowSeconds) {
      throw new ConsumerRuleError(
        "BatchingWindowOutOfRange",
        `maxBatchingWindow must be from 0 to 5 minutes, got ${formatSeconds(t.batchingWindowSeconds)}`,
        t.path,
      );
    }
    if (t.fifo && t.batchingWindowSeconds > 0) {
      throw new ConsumerRuleError(
        "SqsFifoBatchingWindow",
        "FIFO queue triggers do not support a batching window",
        t.path,
      );
    }
  }
  if (isKnown(t.batchSize, t.batchingWindowSeconds) && t.batchSize > 10 && t.batchingWindowSeconds < 1) {
    throw new ConsumerRuleError(
      "SqsBatchSizeNeedsBatchingWindow",
      "a batch size above 10 needs a maxBatchingWindow of at least 1 second",
      t.path,
    );
  }
  const c = t.maxConcurrency;
  if (
    c !== undefined &&
    isKnown(c) &&
    (!Number.isInteger(c) || c < L.minConcurrency || c > L.maxConcurrency)
  ) {
    throw new ConsumerRuleError(
      "SqsMaxConcurrencyOutOfRange",
      `maxConcurrency must be an integer from ${L.minConcurrency} to ${L.maxConcurrency}, got ${c}`,
      t.path,
    );
  }
  const p = t.provisionedPollers;
  if (!p) return;
  if (c !== undefined) {
    throw new ConsumerRuleError(
      "SqsProvisionedWithMaxConcurrency",
      "provisionedPollers and maxConcurrency are mutually exclusive on an SQS trigger (Lambda refuses both): " +
        "in provisioned mode the pollers bound the concurrency; give only one of them",
      t.path,
    );
  }
  if (!pollersFit(p, L.minPollers, L.maxMinimumPollers, L.maxMaximumPollers)) {
    throw new ConsumerRuleError(
      "SqsPollersOutOfRange",
      `an SQS trigger's provisioned pollers must be ${L.minPollers} ≤ minimumPollers (≤ ${L.maxMinimumPollers}) ` +
        `≤ maximumPollers (≤ ${L.maxMaximumPollers}), got ${p.minimumPollers} and ${p.maximumPollers}`,
      t.path,
    );
  }
}

/** What the longest SQS retry path is computed from. */
export interface SqsRetryPathInput {
  readonly retentionSeconds: number;
  readonly dlqRetentionSeconds: number;
  /** How long after the DLQ retention you may still replay by hand (e.g. from an archive). @default 0 */
  readonly plannedReplaySeconds?: number;
}

/**
 * How long after its first send a message (or a copy of it) can still reach an SQS consumer.
 *
 * Every copy the library or its tools send is a new SQS message with a fresh retention period:
 * - the consumer parks a permanent failure in the DLQ with SendMessage at any time within the
 *   queue's retention, and the parked copy is kept for the DLQ's retention from then;
 * - a redrive (the `dlq` tool, or SQS's own StartMessageMoveTask) of a copy just before it expires
 *   sends it to the source queue anew, where it can wait for a consumer for another retention.
 *
 * So the longest path is retention + DLQ retention + retention, for standard and FIFO queues alike
 * (SQS's own move to the DLQ keeps the enqueue time on standard queues, so it is shorter), plus any
 * replay planned beyond that.
 */
export function sqsRetryPathSeconds(i: SqsRetryPathInput): number | undefined {
  const planned = i.plannedReplaySeconds ?? 0;
  if (!isKnown(i.retentionSeconds, i.dlqRetentionSeconds, planned)) return undefined;
  return i.retentionSeconds + i.dlqRetentionSeconds + i.retentionSeconds + planned;
}
