/**
 * The library's configuration rules, as pure functions over seconds and counts, so they can be
 * tested without a synth and reused by anything that configures a consumer. The constructs call
 * them and let the error fail `cdk synth`; each message says what is wrong, why it matters, and how
 * to fix it, and each error carries a stable `code` (tests and tools match codes, not text).
 *
 * A value that is a CloudFormation token (a parameter, an attribute of another resource) is not
 * known at synth: every rule skips the checks that need it instead of misreading the token's
 * placeholder number.
 */
import { Token } from "aws-cdk-lib";
import { minimumHeartbeatVisibilitySeconds } from "../sqs/heartbeatDefaults.ts";
import { QUEUE_NAME_PATTERN, SQS_LIMITS } from "../sqs/sqsLimits.ts";

/** The stable codes of `ConsumerRuleError`, one per rule. */
export type ConsumerRuleCode =
  // SQS queues and triggers
  | "VisibilityTimeoutTooShort"
  | "VisibilityTimeoutAboveMaximum"
  | "VisibilityTimeoutUnknown"
  | "HeartbeatVisibilityTooShort"
  | "MaxReceiveCountOutOfRange"
  | "FifoReceiveHeadroomTooSmall"
  | "QueueNameInvalid"
  | "QueueNameTooLong"
  | "RetentionOutOfRange"
  | "DlqRetentionShorterThanQueue"
  | "SqsBatchSizeOutOfRange"
  | "SqsBatchSizeNeedsBatchingWindow"
  | "SqsFifoBatchingWindow"
  | "SqsMaxConcurrencyOutOfRange"
  | "SqsPollersOutOfRange"
  | "SqsProvisionedWithMaxConcurrency"
  | "BatchingWindowOutOfRange"
  // dedup and inbox windows
  | "DedupWindowTooShort"
  // Kafka on MSK
  | "MskBatchSizeOutOfRange"
  | "MskPollersOutOfRange"
  | "MskPollerGroupInvalid"
  | "KafkaMappingNotProvisioned"
  | "KafkaSchemaRegistryNeedsProvisionedMode"
  | "KafkaMappingWithoutPartialBatchResponse"
  | "KafkaMappingDeadLettersUnfinishedRecords"
  | "KafkaMappingBlocksOnCrash"
  | "KafkaMappingWithoutBisect"
  | "KafkaDestinationIsSource"
  | "KafkaRetryAttemptsOutOfRange"
  | "KafkaRetriesBelowWaits"
  | "KafkaTopicMappedTwice"
  | "MskConsumerOutsideVpc"
  | "KafkaProducerOutsideVpc"
  | "RetryLadderInvalid"
  | "SchemaRegistryInvalid"
  | "SchemaRegistryNotTls"
  // the outbox relay
  | "RelayParallelizationBreaksOrder";

/**
 * A rule of the library was broken by the CDK configuration. `code` is stable; `path` is the
 * construct path of the construct whose configuration broke it (like aws-cdk-lib's
 * `ValidationError`). The message starts with `[code] path:`.
 */
export class ConsumerRuleError extends Error {
  override readonly name = "ConsumerRuleError";
  readonly code: ConsumerRuleCode;
  readonly path: string | undefined;

  constructor(code: ConsumerRuleCode, message: string, path?: string) {
    super(`[${code}] ${path ? `${path}: ` : ""}${message}`);
    this.code = code;
    this.path = path;
  }
}

/** True when no value is a CloudFormation token: a rule may read them all. */
export function isKnown(...values: ReadonlyArray<number | undefined>): boolean {
  return values.every((v) => v === undefined || !Token.isUnresolved(v));
}

/** `90061` → `"1d 1m 1s"`. */
export function formatSeconds(seconds: number): string {
  if (seconds === 0) return "0s";
  const units: Array<[string, number]> = [
    ["d", 86_400],
    ["h", 3_600],
    ["m", 60],
    ["s", 1],
  ];
  let rest = Math.round(seconds);
  const parts: string[] = [];
  for (const [unit, size] of units) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.join(" ");
}

/**
 * Lambda never extends an SQS message's visibility. AWS recommends a visibility timeout of at
 * least 6 × the function timeout; the batching window adds to the time a message can sit in a
 * poller's batch before the function even starts.
 */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/** SQS's maximum visibility timeout (12 h). */
export const MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200;

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
  if (required > MAX_VISIBILITY_TIMEOUT_SECONDS) {
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

/** SQS's limits on a queue's retention period: 60 s to 14 days. */
export const SQS_RETENTION_SECONDS = { min: 60, max: 14 * 86_400 } as const;
/** SQS's limit on a redrive policy's maxReceiveCount. */
export const MAX_RECEIVE_COUNT = 1000;
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
      q.maxReceiveCount > MAX_RECEIVE_COUNT
    ) {
      throw new ConsumerRuleError(
        "MaxReceiveCountOutOfRange",
        `maxReceiveCount must be an integer from 1 to ${MAX_RECEIVE_COUNT}, got ${q.maxReceiveCount}`,
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
    if (isKnown(seconds) && (seconds < SQS_RETENTION_SECONDS.min || seconds > SQS_RETENTION_SECONDS.max)) {
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

/** Provisioned mode's event pollers for one mapping. */
export interface ProvisionedPollers {
  readonly minimumPollers: number;
  readonly maximumPollers: number;
}

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

/** `min ≤ max`, both integers, inside the given bounds; tokens are not checked. */
function pollersFit(p: ProvisionedPollers, minLow: number, minHigh: number, maxHigh: number): boolean {
  const { minimumPollers: min, maximumPollers: max } = p;
  return !(
    (isKnown(min) && (!Number.isInteger(min) || min < minLow || min > minHigh)) ||
    (isKnown(max) && (!Number.isInteger(max) || max < minLow || max > maxHigh)) ||
    (isKnown(min, max) && min > max)
  );
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

/** The MSK event source's limits (provisioned mode; ProvisionedPollerConfig, Lambda API reference). */
export const MSK_TRIGGER_LIMITS = {
  maxBatchSize: 10_000,
  maxBatchingWindowSeconds: 300,
  maxMinimumPollers: 200,
  maxMaximumPollers: 2000,
  /** PollerGroupName: up to 128 of `[a-zA-Z0-9-_]`. */
  pollerGroupName: /^[a-zA-Z0-9_-]{1,128}$/,
  /** Mappings that may share one poller group, and the sum of their maximum pollers. */
  maxMappingsPerPollerGroup: 100,
  maxPollersPerPollerGroup: 2000,
  /** MaximumRetryAttempts: -1 (until the record expires) or 0–10,000. */
  maxRetryAttempts: 10_000,
} as const;

/** What `checkMskTrigger` checks. */
export interface MskTriggerCheck {
  readonly batchSize: number;
  readonly batchingWindowSeconds: number;
  readonly minimumPollers: number;
  readonly maximumPollers: number;
  /** Shares the pollers of every mapping with this name (in the cluster's VPC). @default - none */
  readonly pollerGroupName?: string;
  /** Mappings of this trigger in the poller group (each has `maximumPollers`). @default 1 */
  readonly mappingsInGroup?: number;
  readonly path?: string;
}

/** Throws on an MSK trigger that Lambda refuses (batch size, window, provisioned pollers). */
export function checkMskTrigger(t: MskTriggerCheck): void {
  const L = MSK_TRIGGER_LIMITS;
  if (
    isKnown(t.batchSize) &&
    (!Number.isInteger(t.batchSize) || t.batchSize < 1 || t.batchSize > L.maxBatchSize)
  ) {
    throw new ConsumerRuleError(
      "MskBatchSizeOutOfRange",
      `an MSK trigger takes batches of 1 to ${L.maxBatchSize}, got ${t.batchSize}`,
      t.path,
    );
  }
  if (
    isKnown(t.batchingWindowSeconds) &&
    (t.batchingWindowSeconds < 0 || t.batchingWindowSeconds > L.maxBatchingWindowSeconds)
  ) {
    throw new ConsumerRuleError(
      "BatchingWindowOutOfRange",
      `maxBatchingWindow must be from 0 to 5 minutes, got ${formatSeconds(t.batchingWindowSeconds)}`,
      t.path,
    );
  }
  const { minimumPollers: min, maximumPollers: max } = t;
  if (!pollersFit(t, 1, L.maxMinimumPollers, L.maxMaximumPollers)) {
    throw new ConsumerRuleError(
      "MskPollersOutOfRange",
      `provisioned pollers must be 1 ≤ minimumPollers (≤ ${L.maxMinimumPollers}) ≤ maximumPollers ` +
        `(≤ ${L.maxMaximumPollers}), got ${min} and ${max}. Provisioned mode cannot be turned off: ` +
        `without it Lambda ignores the consumer's partial batch response, and the schema-registry ` +
        `integration, bisection, retry limits and the Kafka on-failure destination do not exist.`,
      t.path,
    );
  }
  const group = t.pollerGroupName;
  if (group === undefined || Token.isUnresolved(group)) return;
  const mappings = t.mappingsInGroup ?? 1;
  if (!L.pollerGroupName.test(group)) {
    throw new ConsumerRuleError(
      "MskPollerGroupInvalid",
      `pollerGroupName must be 1 to 128 letters, digits, '-' or '_', got '${group}'`,
      t.path,
    );
  }
  if (
    mappings > L.maxMappingsPerPollerGroup ||
    (isKnown(max) && mappings * max > L.maxPollersPerPollerGroup)
  ) {
    throw new ConsumerRuleError(
      "MskPollerGroupInvalid",
      `poller group '${group}' would hold ${mappings} mappings of this trigger (one per ladder topic) with ` +
        `${max} maximum pollers each (${mappings * max} in all); a group holds at most ` +
        `${L.maxMappingsPerPollerGroup} mappings and ${L.maxPollersPerPollerGroup} maximum pollers in all. ` +
        `Lower maximumPollers or use another group.`,
      t.path,
    );
  }
}

/**
 * How the construct sizes a Kafka mapping's MaximumRetryAttempts. What Lambda retries on a mapping
 * is (a) a batch whose invocation failed as a whole (a crash, an out-of-memory kill, a timeout), and
 * (b) what the consumer handed back unfinished in its partial batch response. (b) includes healthy
 * records: a retry-topic record that is not due yet, one not started for lack of time, one whose
 * retry produce failed. Each hand-back uses a retry attempt (the local runtime counts them so too),
 * and once they are used up Lambda sends the record to the on-failure destination. So the limit
 * must leave room for the hand-backs of a healthy record, or it would be dead-lettered for waiting.
 */
export const KAFKA_RETRY_BUDGET = {
  /**
   * The consumer stops waiting for a due retry this long before its deadline
   * (`KAFKA_CONSUMER_DEFAULTS.timeMarginMs`): an invocation waits at most timeout − this.
   */
  timeMarginSeconds: 5,
  /**
   * Retries the construct adds on top of the waits: hand-backs for other reasons (out of time, a
   * retry produce that failed while the cluster was away), and the attempts a crashing record
   * gets before Lambda sends it to the dead-letter topic. Ten is what Lambda itself applies to a
   * mapping with an on-failure destination and no limit.
   */
  headroom: 10,
} as const;

/**
 * How often a healthy record on a rung of `delaySeconds` can be handed back while it waits to be
 * due: each invocation waits up to timeout − margin, then hands it back. `undefined` when a value
 * is a token; `Infinity` when an invocation cannot wait at all (timeout ≤ margin).
 */
export function kafkaWaitHandBacks(delaySeconds: number, functionTimeoutSeconds: number): number | undefined {
  if (!isKnown(delaySeconds, functionTimeoutSeconds)) return undefined;
  if (delaySeconds <= 0) return 0;
  const perInvocation = functionTimeoutSeconds - KAFKA_RETRY_BUDGET.timeMarginSeconds;
  return perInvocation <= 0 ? Number.POSITIVE_INFINITY : Math.ceil(delaySeconds / perInvocation);
}

/** The construct's MaximumRetryAttempts for a mapping whose records wait `delaySeconds` (0 on the main topic). */
export function defaultKafkaRetryAttempts(delaySeconds: number, functionTimeoutSeconds: number): number {
  const waits = kafkaWaitHandBacks(delaySeconds, functionTimeoutSeconds) ?? 0;
  return Math.min(MSK_TRIGGER_LIMITS.maxRetryAttempts, waits + KAFKA_RETRY_BUDGET.headroom);
}

/** An MSK event source mapping of a consumer, as the Kafka rule reads it. */
export interface KafkaMappingCheck {
  readonly topic: string;
  /** Every topic the mapping reads (a destination may not be one of them). @default [topic] */
  readonly topics?: readonly string[];
  readonly provisioned: boolean;
  readonly reportBatchItemFailures: boolean;
  /** SchemaRegistryConfig is set (it needs provisioned mode). @default false */
  readonly schemaRegistry?: boolean;
  /** BisectBatchOnFunctionError. @default false (Lambda's default) */
  readonly bisect?: boolean;
  /** BatchSize. @default 100 (Lambda's default for Kafka) */
  readonly batchSize?: number;
  /** MaximumRetryAttempts. @default -1 (Lambda's default: retry until the record expires) */
  readonly retryAttempts?: number;
  /** MaximumRecordAgeInSeconds. @default -1 */
  readonly maxRecordAgeSeconds?: number;
  readonly onFailureDestination?: string;
  /**
   * The fewest retry attempts a healthy record of this mapping may need (`kafkaWaitHandBacks` + 1):
   * a limit below it dead-letters records that only waited. @default 1
   */
  readonly minimumRetryAttempts?: number;
  readonly path?: string;
}

/**
 * Throws unless a Kafka mapping lets the library decide the fate of every record, drops nothing,
 * and cannot be blocked for good by one record:
 * - provisioned mode and ReportBatchItemFailures: Lambda's error handling controls for Kafka
 *   (partial batch responses, bisect, retry limits, on-failure destinations) and its schema
 *   registry integration exist only in provisioned mode, and without ReportBatchItemFailures
 *   Lambda ignores the partial batch response and commits records the consumer handed back;
 * - no maximum record age: a record that is old has not failed (it waited: consumer lag, a long
 *   retry rung), and Lambda would give up on it;
 * - a record that crashes the function every time (out of memory, a runtime crash, a timeout) is
 *   no exception the consumer can route: Lambda must bisect the batch down to it
 *   (BisectBatchOnFunctionError, or batches of one), retry it a finite number of times, and then
 *   send it to a Kafka topic of the same cluster (`kafka://<dead-letter topic>`). A Kafka
 *   destination drops nothing: Lambda writes the record itself (key, value, headers) inside its
 *   failure metadata, and `npm run dlq` reads and replays that. An SQS or SNS destination gets the
 *   metadata only (the records would be lost), and unlimited retries block the partition forever;
 * - the destination is not a topic the mapping reads (Lambda refuses that recursion);
 * - the retry limit leaves room for the hand-backs of a healthy record (`KAFKA_RETRY_BUDGET`), or
 *   records that only waited would reach the dead-letter topic. With a Kafka destination and no
 *   limit, Lambda applies 10.
 */
export function checkKafkaMapping(m: KafkaMappingCheck): void {
  checkKafkaMappingMode(m);
  checkKafkaFailurePath(m);
  checkKafkaRetries(m);
}

/** Provisioned mode and partial batch responses: what the consumer's answer relies on. */
function checkKafkaMappingMode(m: KafkaMappingCheck): void {
  if (!m.provisioned) {
    throw new ConsumerRuleError(
      m.schemaRegistry ? "KafkaSchemaRegistryNeedsProvisionedMode" : "KafkaMappingNotProvisioned",
      `the mapping of topic "${m.topic}" is not in provisioned mode (ProvisionedPollerConfig): ` +
        (m.schemaRegistry ? "its SchemaRegistryConfig (Lambda's schema-registry integration), " : "") +
        "partial batch responses (ReportBatchItemFailures, which the consumer's answer relies on), bisection, " +
        "retry limits and the Kafka on-failure destination exist only in provisioned mode. Give it provisioned pollers.",
      m.path,
    );
  }
  if (!m.reportBatchItemFailures) {
    throw new ConsumerRuleError(
      "KafkaMappingWithoutPartialBatchResponse",
      `the mapping of topic "${m.topic}" lacks FunctionResponseTypes ReportBatchItemFailures: Lambda would ignore ` +
        `the consumer's partial batch response and commit the records it handed back.`,
      m.path,
    );
  }
}

/** Where what Lambda gives up on goes: nowhere that drops it, and never a crash loop. */
function checkKafkaFailurePath(m: KafkaMappingCheck): void {
  const age = m.maxRecordAgeSeconds ?? -1;
  const destination = m.onFailureDestination;
  const kafkaDestination = destination?.startsWith("kafka://")
    ? destination.slice("kafka://".length)
    : undefined;
  const givesUp =
    (isKnown(age) && age !== -1) || (destination !== undefined && kafkaDestination === undefined);
  const rawRetries = m.retryAttempts ?? -1;
  if (givesUp || (isKnown(rawRetries) && rawRetries !== -1 && destination === undefined)) {
    throw new ConsumerRuleError(
      "KafkaMappingDeadLettersUnfinishedRecords",
      `the mapping of topic "${m.topic}" would drop records (MaximumRetryAttempts ${rawRetries}, ` +
        `MaximumRecordAgeInSeconds ${age}, on-failure destination ${destination ?? "none"}). A record age limit gives ` +
        `up on records that only waited; an SQS or SNS destination receives metadata, not the records; a retry limit ` +
        `without a destination discards them. Leave the record age unlimited and send what Lambda gives up on to a ` +
        `Kafka topic (kafka://<dead-letter topic>), which receives the records themselves.`,
      m.path,
    );
  }
  if (kafkaDestination === undefined) {
    throw new ConsumerRuleError(
      "KafkaMappingBlocksOnCrash",
      `the mapping of topic "${m.topic}" retries without limit and has no on-failure destination: a record that ` +
        `crashes the function every time (out of memory, a runtime crash, a timeout) is no error the consumer can ` +
        `route, and Lambda would resend it forever, blocking its partition. Give it a finite MaximumRetryAttempts, ` +
        `BisectBatchOnFunctionError and a kafka://<dead-letter topic> destination (addMskTrigger does).`,
      m.path,
    );
  }
  const topics = m.topics ?? [m.topic];
  if (topics.includes(kafkaDestination)) {
    throw new ConsumerRuleError(
      "KafkaDestinationIsSource",
      `the mapping of topic "${m.topic}" sends failed records to "${kafkaDestination}", a topic it reads; Lambda refuses ` +
        `that recursion. Use the dead-letter topic.`,
      m.path,
    );
  }
  if (m.bisect !== true && isKnown(m.batchSize) && (m.batchSize ?? 100) > 1) {
    throw new ConsumerRuleError(
      "KafkaMappingWithoutBisect",
      `the mapping of topic "${m.topic}" does not bisect batches on a function error: a record that crashes the ` +
        `function would take its whole batch (${m.batchSize ?? 100} records) to the dead-letter topic with it. Set ` +
        `BisectBatchOnFunctionError.`,
      m.path,
    );
  }
}

/** A retry limit in range, and above the hand-backs of a healthy record waiting to be due. */
function checkKafkaRetries(m: KafkaMappingCheck): void {
  const rawRetries = m.retryAttempts ?? -1;
  if (!isKnown(rawRetries)) return;
  if (!Number.isInteger(rawRetries) || rawRetries < -1 || rawRetries > MSK_TRIGGER_LIMITS.maxRetryAttempts) {
    throw new ConsumerRuleError(
      "KafkaRetryAttemptsOutOfRange",
      `MaximumRetryAttempts of the mapping of topic "${m.topic}" must be -1 or 0 to ${MSK_TRIGGER_LIMITS.maxRetryAttempts}, got ${rawRetries}`,
      m.path,
    );
  }
  // Documented: infinite retries with an on-failure destination are capped at 10.
  const retries = rawRetries === -1 ? 10 : rawRetries;
  const minimum = m.minimumRetryAttempts ?? 1;
  if (retries < minimum) {
    throw new ConsumerRuleError(
      "KafkaRetriesBelowWaits",
      `the mapping of topic "${m.topic}" allows ${retries} retry attempts, but a healthy record can be handed back ` +
        `${minimum - 1} times while it waits to be due (each invocation waits at most the function timeout − ` +
        `${KAFKA_RETRY_BUDGET.timeMarginSeconds}s, and every hand-back uses an attempt): it would reach the ` +
        `dead-letter topic without having failed. Allow at least ${minimum} (addMskTrigger's default adds ` +
        `${KAFKA_RETRY_BUDGET.headroom}), or raise the function timeout.`,
      m.path,
    );
  }
}

/** One way a message can come back to a consumer, and for how long. */
export interface RetryPath {
  /** The consumer (dedup scope) the path belongs to. */
  readonly consumer: string;
  /** E.g. `queue orders: retention 4d + parked in the DLQ 14d + redriven 4d`. */
  readonly description: string;
  /** `undefined` when a duration is a token (unknown at synth): the path is not checked. */
  readonly seconds: number | undefined;
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

/** One stage of a Kafka retry path: a topic's delay and how long its records may wait. */
export interface KafkaLadderStage {
  readonly topic: string;
  /** Delay before a record in this topic is retried (0 for the main topic). */
  readonly delaySeconds: number;
  readonly retentionSeconds: number;
  /**
   * Retention of the topic a record replayed from this stage lands in (the dead-letter topic's
   * records are replayed to the original topic as new records). @default 0 (not replayed)
   */
  readonly replayedIntoRetentionSeconds?: number;
}

/**
 * How long after its first failure a Kafka record can still reach the consumer: for each stage of
 * the ladder (main topic, retry topics, dead-letter topic), the delays before it plus its retention
 * (a consumer-group reset or a replay from that topic re-reads anything still retained), plus, for
 * the dead-letter topic, the retention of the topic its records are replayed into (a replay by the
 * `dlq` tool produces a new record there, retained from the replay on). The longest stage wins.
 * Plus any planned replay beyond retention.
 */
export function kafkaRetryPathSeconds(
  stages: readonly KafkaLadderStage[],
  plannedReplaySeconds = 0,
): number | undefined {
  let delayBefore = 0;
  let longest = 0;
  for (const stage of stages) {
    const replayed = stage.replayedIntoRetentionSeconds ?? 0;
    if (!isKnown(stage.delaySeconds, stage.retentionSeconds, replayed)) return undefined;
    delayBefore += stage.delaySeconds;
    longest = Math.max(longest, delayBefore + stage.retentionSeconds + replayed);
  }
  return isKnown(plannedReplaySeconds) ? longest + plannedReplaySeconds : undefined;
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

/**
 * The outbox relay's stream mapping must read each shard with one batch at a time. With a
 * ParallelizationFactor above 1, Lambda keeps order only per item (partition key + sort key), and
 * every outbox event is an item of its own: two events of one aggregate can be in two concurrent
 * batches, and the later one would be published first. (The relay's order check would then hold
 * the later one back for the sweeper, so order holds, but most events of busy aggregates would
 * wait minutes for it.) Scale the relay with more stream shards (table throughput), not the factor.
 */
export function checkRelayParallelization(relay: string, parallelizationFactor: number): void {
  if (parallelizationFactor <= 1) return;
  throw new ConsumerRuleError(
    "RelayParallelizationBreaksOrder",
    `Outbox relay "${relay}": parallelizationFactor ${parallelizationFactor} would break order per aggregate. ` +
      `With a factor above 1, Lambda keeps a DynamoDB stream's order only per item, and each outbox event is ` +
      `an item of its own, so two events of one aggregate can be published by concurrent batches in either ` +
      `order. Leave parallelizationFactor at 1 (the default).`,
    relay,
  );
}
