/**
 * The stream rules: every Kinesis and DynamoDB Streams event source mapping of a consumer, and the
 * retry path of a stream trigger. Limits are Lambda's (CreateEventSourceMapping, Lambda API
 * reference): BatchSize 1–10,000 for both sources, MaximumBatchingWindowInSeconds 0–300,
 * MaximumRecordAgeInSeconds -1 or 60–604,800, MaximumRetryAttempts -1 or 0–10,000,
 * ParallelizationFactor 1–10.
 */
import { ConsumerRuleError, formatSeconds, isKnown } from "./ruleError.ts";

/** Lambda's limits of a Kinesis or DynamoDB Streams event source mapping, and the streams' retention. */
export const STREAM_TRIGGER_LIMITS = {
  maxBatchSize: 10_000,
  maxBatchingWindowSeconds: 300,
  minRecordAgeSeconds: 60,
  maxRecordAgeSeconds: 7 * 86_400,
  maxRetryAttempts: 10_000,
  maxParallelizationFactor: 10,
  /** DynamoDB Streams keeps a record 24 h; nothing changes that. */
  dynamoDbStreamRetentionSeconds: 86_400,
  /** A Kinesis stream keeps records 24 h unless its retention is raised (up to 8,760 h). */
  kinesisDefaultRetentionSeconds: 86_400,
} as const;

/** Which stream a mapping reads; `unknown` for a hand-made mapping whose source ARN is a token. */
export type StreamSource = "kinesis" | "dynamodb" | "unknown";

/** A Kinesis or DynamoDB Streams event source mapping of a consumer, as the stream rule reads it. */
export interface StreamMappingCheck {
  readonly source: StreamSource;
  /** What the message names: the stream's construct path or ARN. */
  readonly stream: string;
  readonly reportBatchItemFailures: boolean;
  /** BisectBatchOnFunctionError. @default false (Lambda's default) */
  readonly bisect?: boolean;
  /** BatchSize. @default 100 (Lambda's default) */
  readonly batchSize?: number;
  /** MaximumBatchingWindowInSeconds. @default 0 */
  readonly batchingWindowSeconds?: number;
  /** MaximumRetryAttempts. @default -1 (Lambda's default: until the record expires) */
  readonly retryAttempts?: number;
  /** MaximumRecordAgeInSeconds. @default -1 (Lambda's default: until the record expires) */
  readonly maxRecordAgeSeconds?: number;
  /** ParallelizationFactor. @default 1 */
  readonly parallelizationFactor?: number;
  /** The stream's retention (seconds), when known. @default - unknown */
  readonly retentionSeconds?: number;
  readonly onFailureDestination?: string;
  readonly path?: string;
}

/**
 * Throws unless a stream mapping is one Lambda accepts, lets the consumer's answer count, drops
 * nothing without a trace, and cannot be blocked for long by one record:
 * - the limits Lambda enforces (`StreamBatchSizeOutOfRange`, `BatchingWindowOutOfRange`,
 *   `StreamRetryAttemptsOutOfRange`, `StreamRecordAgeOutOfRange`,
 *   `StreamParallelizationOutOfRange`);
 * - ReportBatchItemFailures: without it Lambda takes the consumer's `batchItemFailures` answer
 *   for a success and moves past the records it handed back;
 * - a bounded retry count or record age needs an on-failure destination: without one Lambda
 *   discards what it gives up on and nothing says which records they were;
 * - unbounded retries and no record age: a record that crashes the function every time (out of
 *   memory, a runtime crash, a timeout) blocks its shard until the stream trims it (24 h, or the
 *   Kinesis retention, up to a year);
 * - bisection: without it, a batch given up on takes its healthy records with the crashing one.
 */
export function checkStreamMapping(m: StreamMappingCheck): void {
  checkStreamLimits(m);
  if (!m.reportBatchItemFailures) {
    throw new ConsumerRuleError(
      "StreamMappingWithoutPartialBatchResponse",
      `the mapping of ${m.stream} lacks FunctionResponseTypes ReportBatchItemFailures: Lambda would take the ` +
        `consumer's batchItemFailures answer for a success and move past the records it handed back. ` +
        `Set reportBatchItemFailures (addKinesisTrigger / addDynamoDbStreamTrigger do).`,
      m.path,
    );
  }
  checkStreamFailurePath(m);
}

/** What Lambda refuses at deploy, refused at synth. */
function checkStreamLimits(m: StreamMappingCheck): void {
  const L = STREAM_TRIGGER_LIMITS;
  const { batchSize, batchingWindowSeconds: window, retryAttempts: retries } = m;
  if (
    batchSize !== undefined &&
    isKnown(batchSize) &&
    (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > L.maxBatchSize)
  ) {
    throw new ConsumerRuleError(
      "StreamBatchSizeOutOfRange",
      `a stream trigger takes batches of 1 to ${L.maxBatchSize}, got ${batchSize}`,
      m.path,
    );
  }
  if (window !== undefined && isKnown(window) && (window < 0 || window > L.maxBatchingWindowSeconds)) {
    throw new ConsumerRuleError(
      "BatchingWindowOutOfRange",
      `maxBatchingWindow must be from 0 to 5 minutes, got ${formatSeconds(window)}`,
      m.path,
    );
  }
  if (
    retries !== undefined &&
    isKnown(retries) &&
    (!Number.isInteger(retries) || retries < -1 || retries > L.maxRetryAttempts)
  ) {
    throw new ConsumerRuleError(
      "StreamRetryAttemptsOutOfRange",
      `retryAttempts must be -1 (until the record expires) or 0 to ${L.maxRetryAttempts}, got ${retries}`,
      m.path,
    );
  }
  const age = m.maxRecordAgeSeconds;
  if (
    age !== undefined &&
    isKnown(age) &&
    age !== -1 &&
    (age < L.minRecordAgeSeconds || age > L.maxRecordAgeSeconds)
  ) {
    throw new ConsumerRuleError(
      "StreamRecordAgeOutOfRange",
      `maxRecordAge must be from 1 minute to 7 days (or -1, until the record expires), got ${formatSeconds(age)}`,
      m.path,
    );
  }
  const factor = m.parallelizationFactor;
  if (
    factor !== undefined &&
    isKnown(factor) &&
    (!Number.isInteger(factor) || factor < 1 || factor > L.maxParallelizationFactor)
  ) {
    throw new ConsumerRuleError(
      "StreamParallelizationOutOfRange",
      `parallelizationFactor must be an integer from 1 to ${L.maxParallelizationFactor}, got ${factor}`,
      m.path,
    );
  }
}

/** The stream's retention in words, for messages. */
function retentionWords(m: StreamMappingCheck): string {
  if (m.source === "dynamodb") return "24h (DynamoDB Streams)";
  if (m.retentionSeconds !== undefined && isKnown(m.retentionSeconds))
    return `${formatSeconds(m.retentionSeconds)} (the stream's retention)`;
  return "the stream's retention (24h to 365d on Kinesis)";
}

/** Where what Lambda gives up on goes, and how long one record can hold its shard. */
function checkStreamFailurePath(m: StreamMappingCheck): void {
  const retries = m.retryAttempts ?? -1;
  const age = m.maxRecordAgeSeconds ?? -1;
  if (!isKnown(retries, age)) return;
  if (m.onFailureDestination === undefined && (retries !== -1 || age !== -1)) {
    throw new ConsumerRuleError(
      "StreamMappingWithoutDestination",
      `the mapping of ${m.stream} gives up on records (MaximumRetryAttempts ${retries}, ` +
        `MaximumRecordAgeInSeconds ${age}) and has no on-failure destination: Lambda would discard them and nothing ` +
        `would say which records they were. Give it an on-failure destination (addKinesisTrigger / ` +
        `addDynamoDbStreamTrigger create an encrypted SQS queue, or take yours as onFailureQueue).`,
      m.path,
    );
  }
  // An age at or above the retention bounds nothing: the stream trims the record first.
  const retention =
    m.source === "dynamodb" ? STREAM_TRIGGER_LIMITS.dynamoDbStreamRetentionSeconds : m.retentionSeconds;
  const ageBounds = age !== -1 && (retention === undefined || !isKnown(retention) || age < retention);
  if (retries === -1 && !ageBounds) {
    throw new ConsumerRuleError(
      "StreamMappingBlocksShard",
      `the mapping of ${m.stream} retries without limit and has no maximum record age below the retention: a record that crashes the ` +
        `function every time (out of memory, a runtime crash, a timeout) is resent until the stream trims it, ` +
        `blocking its shard for up to ${retentionWords(m)}. Give it a finite retryAttempts (the trigger's ` +
        `default is ${STREAM_TRIGGER_DEFAULTS.retryAttempts}) or a maxRecordAge, with an on-failure destination.`,
      m.path,
    );
  }
  if (m.bisect !== true && isKnown(m.batchSize) && (m.batchSize ?? 100) > 1) {
    throw new ConsumerRuleError(
      "StreamMappingWithoutBisect",
      `the mapping of ${m.stream} gives up on whole batches without BisectBatchOnFunctionError: a record that ` +
        `crashes the function would take the healthy records of its batch to the on-failure destination with it. ` +
        `Set bisectBatchOnError, or batches of one.`,
      m.path,
    );
  }
}

/**
 * The trigger's defaults, and why:
 * - `retryAttempts` 10: what Lambda retries is a batch whose invocation crashed (after bisecting
 *   down to the crashing record, which does not count against the quota) and what the consumer
 *   handed back: a transient failure, but also healthy records (held behind a failing one of
 *   their key, not started for lack of time). Each hand-back uses an attempt, so the count
 *   leaves room for those; and it bounds how long a crashing record holds its shard to about
 *   10 × the function timeout. The consumer parks permanent failures itself, so they use none.
 *   Ten is also what Lambda applies to a Kafka mapping with a destination, and the Kafka trigger's
 *   headroom.
 * - `maxRecordAgeSeconds` 6 h: a record older than this is given up on even if it only waited
 *   (consumer lag), so the limit is generous; it still leaves 18 h of a 24 h stream to replay
 *   what Lambda gave up on from the sequence range in the destination's metadata. The outbox
 *   relay uses the same.
 */
export const STREAM_TRIGGER_DEFAULTS = {
  batchSize: 100,
  retryAttempts: 10,
  maxRecordAgeSeconds: 6 * 3600,
  parallelizationFactor: 1,
  /** How long the created on-failure (and parking) queue keeps a message: SQS's maximum. */
  failureQueueRetentionSeconds: 14 * 86_400,
} as const;

/**
 * How long after it was written a stream record can still reach the consumer with the same
 * coordinates (the default dedup key): the stream's retention (DynamoDB Streams: always 24 h), since
 * a batch Lambda gave up on (its maximum record age, its retries) can be read back by the sequence
 * range its on-failure record names until then, and replayed. Without a known retention, the
 * maximum record age when it is bounded; `undefined` when neither is known at synth.
 */
export function streamRetryPathSeconds(
  maxRecordAgeSeconds: number,
  retentionSeconds: number | undefined,
): number | undefined {
  if (retentionSeconds !== undefined && isKnown(retentionSeconds)) return retentionSeconds;
  return maxRecordAgeSeconds !== -1 && isKnown(maxRecordAgeSeconds) ? maxRecordAgeSeconds : undefined;
}
