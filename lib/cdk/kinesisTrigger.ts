import { type Duration, Token } from "aws-cdk-lib";
import * as kinesis from "aws-cdk-lib/aws-kinesis";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type { ConsumerFunctionBase } from "./consumerFunctionBase.ts";
import { KinesisStream } from "./kinesisStream.ts";
import { ConsumerRuleError } from "./rules/ruleError.ts";
import { STREAM_TRIGGER_LIMITS } from "./rules/streamRules.ts";
import { StreamTriggerBase, type StreamTriggerOptions, type StreamTriggerSource } from "./streamTrigger.ts";

/** What a Kinesis trigger reads: the library's `KinesisStream`, or any stream (built here or imported). */
export type KinesisTriggerStream = KinesisStream | kinesis.IStream;

/** Options of `KinesisTrigger` (and `ConsumerFunctionBase.addKinesisTrigger`). */
export interface KinesisTriggerOptions extends StreamTriggerOptions {
  /**
   * Read through this enhanced fan-out consumer (`KinesisStream.addConsumer`, a
   * `kinesis.StreamConsumer`, or an imported one): dedicated throughput per shard, pushed with
   * SubscribeToShard. It must be a consumer of the trigger's stream.
   * @default - shared throughput (GetRecords polling)
   */
  readonly consumer?: kinesis.IStreamConsumer;
  /**
   * With `startingPosition: AT_TIMESTAMP`: where to start, in Unix seconds.
   * @default - none
   */
  readonly startingPositionTimestamp?: number;
  /**
   * The stream's retention, for a stream whose retention synth cannot read (an imported one): the
   * dedup window is checked against it when `maxRecordAge` is unbounded.
   * @default - read from a `KinesisStream` or a `kinesis.Stream` of the app; unknown for an imported stream
   */
  readonly retentionPeriod?: Duration;
}

/**
 * The actions Lambda's Kinesis mapping needs of the execution role on the stream (Lambda developer
 * guide, "Process Amazon Kinesis Data Streams records with Lambda"). Lambda's list also names
 * `kinesis:SubscribeToShard`, which IAM scopes to the consumer ARN: granted there with
 * `DescribeStreamConsumer` when the trigger reads through an enhanced fan-out consumer.
 */
export const KINESIS_MAPPING_ACTIONS = [
  "kinesis:DescribeStream",
  "kinesis:DescribeStreamSummary",
  "kinesis:GetRecords",
  "kinesis:GetShardIterator",
  "kinesis:ListShards",
] as const;

/** What the mapping needs on an enhanced fan-out consumer (the consumer ARN). */
export const KINESIS_FAN_OUT_ACTIONS = [
  "kinesis:SubscribeToShard",
  "kinesis:DescribeStreamConsumer",
] as const;

/** The stream's retention in seconds when synth can read it. */
function retentionOf(stream: KinesisTriggerStream, given: Duration | undefined): number | undefined {
  if (given) return given.isUnresolved() ? undefined : given.toSeconds();
  if (stream instanceof KinesisStream) {
    return stream.retentionPeriod.isUnresolved() ? undefined : stream.retentionPeriod.toSeconds();
  }
  if (stream instanceof kinesis.Stream) {
    const hours = (stream.node.defaultChild as kinesis.CfnStream).retentionPeriodHours;
    if (hours === undefined) return STREAM_TRIGGER_LIMITS.kinesisDefaultRetentionSeconds;
    return Token.isUnresolved(hours) ? undefined : hours * 3600;
  }
  return undefined;
}

/**
 * A Kinesis data stream trigger with the library's defaults (`StreamTriggerBase`): partial batch
 * responses, bisection, 10 retries, a 6 h record age, TRIM_HORIZON, EventCount metrics, and an SQS
 * on-failure destination that is also the consumer's parking queue (`DLQ_URL`). Grants exactly
 * what the mapping reads with (`KINESIS_MAPPING_ACTIONS` on the stream; `KINESIS_FAN_OUT_ACTIONS`
 * on the consumer with `consumer`), `kms:Decrypt` on a customer-managed key, and send on the
 * queue. Bind it with `consumer.addTrigger(trigger)`.
 */
export class KinesisTrigger extends StreamTriggerBase {
  /** The stream the trigger reads. */
  readonly stream: kinesis.IStream;
  private readonly options: KinesisTriggerOptions;
  private readonly retentionSeconds: number | undefined;

  /** A trigger for `stream`; nothing is created until it is bound. */
  constructor(stream: KinesisTriggerStream, options: KinesisTriggerOptions = {}) {
    super(options);
    this.stream = stream instanceof KinesisStream ? stream.stream : stream;
    this.options = options;
    this.retentionSeconds = retentionOf(stream, options.retentionPeriod);
  }

  /** The stream (or its fan-out consumer) as the mapping reads it, and its grants. */
  protected resolveSource(consumer: ConsumerFunctionBase): StreamTriggerSource {
    const { stream, options } = this;
    const fanOut = options.consumer;
    if (fanOut) checkConsumerOfStream(consumer, fanOut, stream);
    const timestamp = options.startingPositionTimestamp;
    const mappingOptions: Partial<lambda.EventSourceMappingOptions> =
      timestamp === undefined ? {} : { startingPositionTimestamp: timestamp };
    return {
      source: "kinesis",
      eventSourceArn: fanOut ? fanOut.streamConsumerArn : stream.streamArn,
      path: stream.node.path,
      retentionSeconds: this.retentionSeconds,
      mappingOptions,
      grantRead: (c) => {
        // `grant` adds to the role, or to the stream's resource policy for a role of another account.
        stream.grant(c.function, ...KINESIS_MAPPING_ACTIONS);
        fanOut?.grant(c.function, ...KINESIS_FAN_OUT_ACTIONS);
        stream.encryptionKey?.grantDecrypt(c.function);
      },
    };
  }
}

/** A fan-out consumer registered on another stream would read that stream instead. */
function checkConsumerOfStream(
  consumer: ConsumerFunctionBase,
  fanOut: kinesis.IStreamConsumer,
  stream: kinesis.IStream,
): void {
  const a = fanOut.stream.streamArn;
  const b = stream.streamArn;
  const differ = fanOut.stream !== stream && !Token.isUnresolved(a) && !Token.isUnresolved(b) && a !== b;
  if (!differ) return;
  throw new ConsumerRuleError(
    "KinesisConsumerOfAnotherStream",
    `the enhanced fan-out consumer ${fanOut.node.path} is registered on ${a}, not on the trigger's stream ${b}: the ` +
      "mapping would read that stream. Pass a consumer of this stream (KinesisStream.addConsumer).",
    consumer.node.path,
  );
}
