/**
 * The library's configuration rules are pure functions over seconds and counts (one module per
 * service here), so they can be tested without a synth and reused by anything that configures a
 * consumer. The constructs call them and let the error fail `cdk synth`; each message says what is
 * wrong, why it matters, and how to fix it, and each error carries a stable `code` (tests and tools
 * match codes, not text).
 *
 * A value that is a CloudFormation token (a parameter, an attribute of another resource) is not
 * known at synth: every rule skips the checks that need it instead of misreading the token's
 * placeholder number.
 */
import { Token } from "aws-cdk-lib";

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
  | "SqsTriggerWithoutDlq"
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
  // Kinesis and DynamoDB Streams
  | "StreamBatchSizeOutOfRange"
  | "StreamRetryAttemptsOutOfRange"
  | "StreamRecordAgeOutOfRange"
  | "StreamParallelizationOutOfRange"
  | "StreamMappingWithoutPartialBatchResponse"
  | "StreamMappingWithoutDestination"
  | "StreamMappingBlocksShard"
  | "StreamMappingWithoutBisect"
  | "StreamParkingQueueConflict"
  | "DynamoDbTableWithoutStream"
  | "KinesisConsumerOfAnotherStream"
  // the outbox relay
  | "RelayParallelizationBreaksOrder";

/**
 * A rule of the library was broken by the CDK configuration. `code` is stable; `path` is the
 * construct path of the construct whose configuration broke it (like aws-cdk-lib's
 * `ValidationError`). The message starts with `[code] path:`.
 */
export class ConsumerRuleError extends Error {
  /** The literal class name, which survives minification. */
  override readonly name = "ConsumerRuleError";
  /** The rule that was broken: stable, for tests and tools to match. */
  readonly code: ConsumerRuleCode;
  /** The construct path of the construct whose configuration broke the rule, when known. */
  readonly path: string | undefined;

  /** Creates the error; the message is prefixed with `[code] path:`. */
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
