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

/** The stable codes of `ConsumerRuleError`, one per rule. */
export type ConsumerRuleCode =
  // SQS queues and triggers
  | "VisibilityTimeoutTooShort"
  | "VisibilityTimeoutAboveMaximum"
  | "VisibilityTimeoutUnknown"
  | "HeartbeatVisibilityTooShort"
  | "MaxReceiveCountOutOfRange"
  | "FifoReceiveHeadroomTooSmall"
  | "RetentionOutOfRange"
  | "DlqRetentionShorterThanQueue"
  | "SqsBatchSizeOutOfRange"
  | "SqsBatchSizeNeedsBatchingWindow"
  | "SqsFifoBatchingWindow"
  | "SqsMaxConcurrencyOutOfRange"
  | "BatchingWindowOutOfRange"
  // dedup and inbox windows
  | "DedupWindowTooShort"
  // Kafka on MSK
  | "MskBatchSizeOutOfRange"
  | "MskPollersOutOfRange"
  | "KafkaMappingNotProvisioned"
  | "KafkaMappingWithoutPartialBatchResponse"
  | "KafkaMappingDeadLettersUnfinishedRecords"
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
} as const;

/** What `checkSqsTrigger` checks. */
export interface SqsTriggerCheck {
  readonly fifo: boolean;
  readonly batchSize: number;
  readonly batchingWindowSeconds: number;
  readonly maxConcurrency?: number;
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
}

/** The MSK event source's limits (provisioned mode). */
export const MSK_TRIGGER_LIMITS = {
  maxBatchSize: 10_000,
  maxBatchingWindowSeconds: 300,
  maxMinimumPollers: 200,
  maxMaximumPollers: 2000,
} as const;

/** What `checkMskTrigger` checks. */
export interface MskTriggerCheck {
  readonly batchSize: number;
  readonly batchingWindowSeconds: number;
  readonly minimumPollers: number;
  readonly maximumPollers: number;
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
  const bad =
    (isKnown(min) && (!Number.isInteger(min) || min < 1 || min > L.maxMinimumPollers)) ||
    (isKnown(max) && (!Number.isInteger(max) || max < 1 || max > L.maxMaximumPollers)) ||
    (isKnown(min, max) && min > max);
  if (bad) {
    throw new ConsumerRuleError(
      "MskPollersOutOfRange",
      `provisioned pollers must be 1 ≤ minimumPollers (≤ ${L.maxMinimumPollers}) ≤ maximumPollers ` +
        `(≤ ${L.maxMaximumPollers}), got ${min} and ${max}. Provisioned mode cannot be turned off: ` +
        `without it Lambda ignores the consumer's partial batch response.`,
      t.path,
    );
  }
}

/** An MSK event source mapping of a consumer, as the Kafka rule reads it. */
export interface KafkaMappingCheck {
  readonly topic: string;
  readonly provisioned: boolean;
  readonly reportBatchItemFailures: boolean;
  /** MaximumRetryAttempts. @default -1 (Lambda's default: retry until the record is done) */
  readonly retryAttempts?: number;
  /** MaximumRecordAgeInSeconds. @default -1 */
  readonly maxRecordAgeSeconds?: number;
  readonly onFailureDestination?: string;
  readonly path?: string;
}

/**
 * Throws unless a Kafka mapping lets the library decide the fate of every record:
 * - provisioned mode and ReportBatchItemFailures: Lambda's error handling controls for Kafka exist
 *   only in provisioned mode, and without ReportBatchItemFailures Lambda ignores the partial batch
 *   response and commits records the consumer handed back (out of time, lease lost, a produce to
 *   the retry topic that failed);
 * - no retry limit, no maximum record age and no on-failure destination: the records Lambda
 *   retries are the ones the consumer reported unfinished, which are healthy. After a limit, Lambda
 *   would drop them, or send them to the destination in its own format, without the
 *   `x-original-topic` context the replay tool needs. Failures go through the library instead:
 *   transient ones up the retry ladder, permanent ones to the dead-letter topic with context.
 */
export function checkKafkaMapping(m: KafkaMappingCheck): void {
  if (!m.provisioned) {
    throw new ConsumerRuleError(
      "KafkaMappingNotProvisioned",
      `the mapping of topic "${m.topic}" is not in provisioned mode (ProvisionedPollerConfig): Lambda's Kafka ` +
        `error handling, including partial batch responses, exists only in provisioned mode.`,
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
  const retries = m.retryAttempts ?? -1;
  const age = m.maxRecordAgeSeconds ?? -1;
  if ((isKnown(retries) && retries !== -1) || (isKnown(age) && age !== -1) || m.onFailureDestination) {
    throw new ConsumerRuleError(
      "KafkaMappingDeadLettersUnfinishedRecords",
      `the mapping of topic "${m.topic}" gives up on records (MaximumRetryAttempts ${retries}, ` +
        `MaximumRecordAgeInSeconds ${age}, on-failure destination ${m.onFailureDestination ?? "none"}). The records ` +
        `Lambda retries are the ones the consumer reported unfinished (out of time, lease lost, retry produce failed): ` +
        `healthy records, which Lambda would drop or dead-letter in its own format without x-original-topic. ` +
        `Leave retries unlimited with no destination; the consumer dead-letters real failures itself, with context.`,
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
