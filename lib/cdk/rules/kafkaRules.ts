/** The Kafka rules: the MSK trigger, every Kafka mapping's failure path and retries, the ladder's retry path. */
import { Token } from "aws-cdk-lib";
import { pollersFit } from "./pollers.ts";
import { ConsumerRuleError, formatSeconds, isKnown } from "./ruleError.ts";

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
