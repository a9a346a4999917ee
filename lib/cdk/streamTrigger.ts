/**
 * What a Kinesis trigger and a DynamoDB Streams trigger share: the mapping with the library's
 * defaults, the on-failure queue that is also the consumer's parking queue, the retry path, and
 * the stream rules (also over stream mappings added to the consumer by hand).
 */
import { Annotations, Duration, Stack, Validations } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { SqsDlq } from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { LAMBDA_ENV } from "../env.ts";
import type { ConsumerFunctionBase, IConsumerTrigger, TriggerRetryPath } from "./consumerFunctionBase.ts";
import { acknowledgeGuardRule, CONTROL_TOWER_RULE } from "./guardAcknowledgements.ts";
import { claimParkingQueue, streamParkingQueueOf } from "./parkingQueue.ts";
import { formatSeconds, isKnown } from "./rules/ruleError.ts";
import {
  checkStreamMapping,
  STREAM_TRIGGER_DEFAULTS,
  type StreamMappingCheck,
  type StreamSource,
  streamRetryPathSeconds,
} from "./rules/streamRules.ts";

/** Options of every stream trigger (`KinesisTriggerOptions`, `DynamoDbStreamTriggerOptions`). */
export interface StreamTriggerOptions {
  /** Records per batch (1–10,000). @default 100 */
  readonly batchSize?: number;
  /** How long the poller gathers records before invoking (0–5 min). @default Duration.seconds(0) */
  readonly maxBatchingWindow?: Duration;
  /** Where a new mapping starts reading. @default lambda.StartingPosition.TRIM_HORIZON */
  readonly startingPosition?: lambda.StartingPosition;
  /**
   * Retries of a batch that failed or came back with failed records (-1 for none, or 0–10,000).
   * The consumer parks permanent failures itself, so what Lambda retries is transient failures,
   * records it handed back unstarted, and a record that crashes the function (after bisecting
   * to it, which uses no attempt); after these, the batch's metadata goes to the on-failure
   * queue. Each retry holds the shard.
   * @default 10
   */
  readonly retryAttempts?: number;
  /**
   * Records older than this are given up on (metadata to the on-failure queue) even if they only
   * waited: 1 min–7 days, or `"unbounded"` (until the stream trims them). Counts as the trigger's
   * retry path for the dedup window.
   * @default Duration.hours(6)
   */
  readonly maxRecordAge?: Duration | "unbounded";
  /**
   * Concurrent batches per shard (1–10). Above 1, Lambda keeps order per partition key (Kinesis)
   * or per item (DynamoDB) only, not per shard: use it with the consumer's `ordering: "key"`
   * (synth warns, since it cannot see the consumer's option).
   * @default 1
   */
  readonly parallelizationFactor?: number;
  /**
   * The on-failure destination, which is also the consumer's parking queue (`DLQ_URL`, send
   * granted). Lambda's message there names the shard and sequence range of a batch it gave up on
   * (never the records); the consumer parks bad records there itself, with their payload and
   * failure context. One function has one parking queue: every stream trigger of it uses the
   * same queue.
   * @default - an SQS-encrypted queue of the consumer's, TLS-only, keeping messages 14 days
   */
  readonly onFailureQueue?: sqs.IQueue;
  /** Lambda's event filters (`lambda.FilterCriteria.filter({...})`), passed through. @default - none */
  readonly filters?: ReadonlyArray<Record<string, unknown>>;
}

/** What a concrete trigger knows of its stream. */
export interface StreamTriggerSource {
  /** Which stream: a Kinesis data stream, or a DynamoDB table's stream. */
  readonly source: "kinesis" | "dynamodb";
  /** The ARN the mapping reads: the stream, the table's stream, or an enhanced fan-out consumer. */
  readonly eventSourceArn: string;
  /** The stream's construct path, for messages and ids. */
  readonly path: string;
  /** The stream's retention in seconds; `undefined` when unknown at synth (an imported stream). */
  readonly retentionSeconds: number | undefined;
  /** Grants what the mapping reads the stream with (the execution role's, as Lambda uses it). */
  grantRead(consumer: ConsumerFunctionBase): void;
  /** Extra mapping settings (Kinesis: the starting timestamp). */
  readonly mappingOptions?: Partial<lambda.EventSourceMappingOptions>;
}

/** Mappings a stream trigger made (checked when bound), so the consumer's synth check skips them. */
const madeByTrigger = new WeakSet<lambda.CfnEventSourceMapping>();

/**
 * A stream trigger with the library's defaults: ReportBatchItemFailures, bisection, a bounded
 * retry count and record age, TRIM_HORIZON, an SQS on-failure destination that is also the
 * consumer's parking queue, EventCount metrics. Subclasses say what the stream is.
 */
export abstract class StreamTriggerBase implements IConsumerTrigger {
  /** The event source mapping, once bound. */
  mapping: lambda.EventSourceMapping | undefined;
  /** The on-failure and parking queue, once bound. */
  onFailureQueue: sqs.IQueue | undefined;
  private readonly streamOptions: StreamTriggerOptions;

  /** Keeps the options; nothing is created until the trigger is bound. */
  protected constructor(options: StreamTriggerOptions) {
    this.streamOptions = options;
  }

  /** The stream as this trigger reads it, resolved when bound (it may throw a rule error). */
  protected abstract resolveSource(consumer: ConsumerFunctionBase): StreamTriggerSource;

  /**
   * Adds the mapping, grants and variables to `consumer`, checking the rules; throws
   * `ConsumerRuleError` when one is broken (e.g. `StreamMappingBlocksShard`).
   */
  bind(consumer: ConsumerFunctionBase): void {
    const s = this.resolveSource(consumer);
    const o = this.streamOptions;
    const window = o.maxBatchingWindow ?? Duration.seconds(0);
    const age = o.maxRecordAge ?? Duration.seconds(STREAM_TRIGGER_DEFAULTS.maxRecordAgeSeconds);
    const ageSeconds = age === "unbounded" ? -1 : age.toSeconds();
    const settings = {
      batchSize: o.batchSize ?? STREAM_TRIGGER_DEFAULTS.batchSize,
      retryAttempts: o.retryAttempts ?? STREAM_TRIGGER_DEFAULTS.retryAttempts,
      parallelizationFactor: o.parallelizationFactor ?? STREAM_TRIGGER_DEFAULTS.parallelizationFactor,
    };
    const queue = this.parkingQueue(consumer);
    checkStreamMapping({
      source: s.source,
      stream: s.path,
      reportBatchItemFailures: true,
      bisect: true,
      ...settings,
      batchingWindowSeconds: window.toSeconds(),
      maxRecordAgeSeconds: ageSeconds,
      ...(s.retentionSeconds !== undefined ? { retentionSeconds: s.retentionSeconds } : {}),
      onFailureDestination: queue.queueArn,
      path: consumer.node.path,
    });
    this.mapping = new lambda.EventSourceMapping(consumer, `${s.source}-${s.path.replace(/\//g, "-")}`, {
      target: consumer.function,
      eventSourceArn: s.eventSourceArn,
      startingPosition: o.startingPosition ?? lambda.StartingPosition.TRIM_HORIZON,
      ...settings,
      maxBatchingWindow: window,
      reportBatchItemFailures: true,
      // A record that crashes the function (no error the consumer can route) is bisected out, so
      // it goes to the destination alone, after the retries, and its batch's healthy records run.
      bisectBatchOnError: true,
      ...(age === "unbounded" ? {} : { maxRecordAge: age }),
      // Lambda writes the destination with the function's role (SqsDlq grants sqs:SendMessage).
      onFailure: new SqsDlq(queue),
      // EventCount is the one metric group a stream mapping has (ErrorCount and KafkaMetrics are
      // Kafka's: EventSourceMappingMetricsConfig, Lambda API reference).
      metricsConfig: { metrics: [lambda.MetricType.EVENT_COUNT] },
      ...(o.filters ? { filters: [...o.filters] } : {}),
      ...s.mappingOptions,
    });
    madeByTrigger.add(this.mapping.node.defaultChild as lambda.CfnEventSourceMapping);
    s.grantRead(consumer);
    // The consumer parks bad records with their payload and context here itself (contract 1 of
    // issue 38): Lambda's on-failure message has the shard and sequence range, never the record.
    queue.grantSendMessages(consumer.function);
    consumer.addEnvironment(LAMBDA_ENV.dlqUrl, queue.queueUrl);
    this.warnOrdering(consumer, settings.parallelizationFactor);
    const path = retryPathOf(s, ageSeconds);
    if (path.seconds === undefined) warnRetentionUnknown(consumer, s.path);
    consumer.addRetryPath(path);
  }

  /** The queue the trigger was given, or the consumer's parking queue (created on first use). */
  private parkingQueue(consumer: ConsumerFunctionBase): sqs.IQueue {
    const queue =
      this.streamOptions.onFailureQueue ?? streamParkingQueueOf(consumer) ?? createParkingQueue(consumer);
    claimParkingQueue(consumer, queue, "stream");
    this.onFailureQueue = queue;
    return queue;
  }

  /** Above 1 batch per shard, order holds per key only: synth cannot see the consumer's `ordering`. */
  private warnOrdering(consumer: ConsumerFunctionBase, factor: number): void {
    if (!isKnown(factor) || factor <= 1) return;
    Annotations.of(consumer).addWarningV2(
      "reliable-consumers:streamTrigger:parallelizationOrdering",
      `parallelizationFactor ${factor}: Lambda runs ${factor} batches of a shard at once and keeps order per ` +
        "partition key (Kinesis) or per item (DynamoDB) only, not per shard. If the consumer relies on per-shard " +
        'order (its default, ordering: "shard"), set ordering: "key" in the consumer, or leave the factor at 1.',
    );
  }
}

/** The consumer's parking queue: encrypted, TLS-only, 14 days; itself a dead-letter destination. */
function createParkingQueue(consumer: ConsumerFunctionBase): sqs.IQueue {
  const queue = new sqs.Queue(consumer, "StreamFailures", {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.seconds(STREAM_TRIGGER_DEFAULTS.failureQueueRetentionSeconds),
  });
  Validations.of(queue).acknowledge({
    id: "AwsSolutions-SQS3",
    reason:
      "This queue is itself a dead-letter destination: the on-failure destination of the consumer's stream " +
      "mappings and its parking queue. It is read by the DLQ tooling, not consumed by a trigger, so it has no DLQ.",
  });
  acknowledgeGuardRule(
    queue,
    CONTROL_TOWER_RULE.sqsDeadLetterQueue,
    "This queue is itself a dead-letter destination (stream mappings' on-failure destination and the " +
      "consumer's parking queue, written by Lambda and SendMessage, not by an SQS redrive): no DLQ, and no " +
      "source queue for a redrive-allow policy to name.",
  );
  return queue;
}

/** The trigger's retry path: the stream's retention (a given-up batch can be replayed until then), else the record age. */
function retryPathOf(s: StreamTriggerSource, ageSeconds: number): TriggerRetryPath {
  const seconds = streamRetryPathSeconds(ageSeconds, s.retentionSeconds);
  const what = s.source === "kinesis" ? "Kinesis stream" : "DynamoDB stream of";
  if (seconds === undefined) {
    return { description: `${what} ${s.path}: retention unknown at synth (imported)`, seconds };
  }
  const bound =
    ageSeconds !== -1 && seconds === ageSeconds
      ? `maximum record age ${formatSeconds(seconds)}`
      : `retention ${formatSeconds(seconds)}`;
  return { description: `${what} ${s.path}: ${bound}`, seconds };
}

/** Warns that the retry path of an imported stream is not checked against the dedup window. */
function warnRetentionUnknown(consumer: ConsumerFunctionBase, path: string): void {
  Annotations.of(consumer).addWarningV2(
    "reliable-consumers:streamTrigger:retentionUnchecked",
    `the retention of ${path} is not known at synth and the maximum record age is unbounded: the dedup window is ` +
      "not checked against this trigger's retry path. Give the trigger the stream's retentionPeriod, or bound " +
      "maxRecordAge.",
  );
}

/**
 * The stream rule (`checkStreamMapping`) over every Kinesis and DynamoDB Streams mapping of the
 * consumer that no stream trigger made (one added with `addEventSource`, say). A stream mapping
 * is one with a starting position that names no Kafka topic and no MQ queue.
 */
export function streamMappingErrors(consumer: ConsumerFunctionBase): string[] {
  const errors: string[] = [];
  const stack = Stack.of(consumer);
  for (const c of consumer.node.findAll()) {
    if (!(c instanceof lambda.CfnEventSourceMapping) || madeByTrigger.has(c)) continue;
    if (c.startingPosition === undefined || c.topics !== undefined || c.queues !== undefined) continue;
    try {
      checkStreamMapping(streamMappingCheckOf(stack, c));
    } catch (error) {
      errors.push((error as Error).message);
    }
  }
  return errors;
}

/** One hand-made stream mapping as `checkStreamMapping` reads it. */
function streamMappingCheckOf(stack: Stack, c: lambda.CfnEventSourceMapping): StreamMappingCheck {
  const arn = stack.resolve(c.eventSourceArn) as unknown;
  const text = JSON.stringify(arn);
  const source: StreamSource = text.includes(":kinesis:")
    ? "kinesis"
    : text.includes(":dynamodb:") || text.includes('"StreamArn"')
      ? "dynamodb"
      : "unknown";
  const destination = stack.resolve(c.destinationConfig) as
    | { onFailure?: { destination?: unknown } }
    | undefined;
  const responseTypes = (stack.resolve(c.functionResponseTypes) as string[] | undefined) ?? [];
  const optional = <K extends keyof StreamMappingCheck>(key: K, value: StreamMappingCheck[K] | undefined) =>
    value === undefined ? {} : { [key]: value };
  return {
    source,
    stream: typeof arn === "string" ? arn : c.node.path,
    reportBatchItemFailures: responseTypes.includes("ReportBatchItemFailures"),
    bisect: stack.resolve(c.bisectBatchOnFunctionError) === true,
    ...optional("batchSize", c.batchSize),
    ...optional("batchingWindowSeconds", c.maximumBatchingWindowInSeconds),
    ...optional("retryAttempts", c.maximumRetryAttempts),
    ...optional("maxRecordAgeSeconds", c.maximumRecordAgeInSeconds),
    ...optional("parallelizationFactor", c.parallelizationFactor),
    ...(source === "dynamodb" ? { retentionSeconds: 86_400 } : {}),
    ...(destination?.onFailure?.destination !== undefined
      ? { onFailureDestination: String(destination.onFailure.destination) }
      : {}),
    path: c.node.path,
  };
}
