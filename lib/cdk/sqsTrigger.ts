import { Annotations, Duration } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { LAMBDA_ENV } from "../env.ts";
import type { ConsumerFunctionBase, IConsumerTrigger, TriggerRetryPath } from "./consumerFunctionBase.ts";
import { claimParkingQueue } from "./parkingQueue.ts";
import { QueueWithDlq } from "./queueWithDlq.ts";
import type { ProvisionedPollers } from "./rules/pollers.ts";
import { ConsumerRuleError, formatSeconds, isKnown } from "./rules/ruleError.ts";
import { checkSqsTrigger, checkVisibilityTimeout, sqsRetryPathSeconds } from "./rules/sqsRules.ts";

/** What an SQS trigger consumes: the library's `QueueWithDlq`, or any queue (built here or imported). */
export type SqsTriggerQueue = QueueWithDlq | sqs.IQueue;

/** Options of `SqsTrigger` (and `ConsumerFunctionBase.addSqsTrigger`). */
export interface SqsTriggerOptions {
  /**
   * Records per batch: 1–10 on a FIFO queue; 1–10,000 on a standard queue, where above 10 needs a
   * `maxBatchingWindow` of at least 1 second. @default 10
   */
  readonly batchSize?: number;
  /**
   * How long the poller gathers records before invoking (0–5 min; none on FIFO queues). It adds to
   * the visibility timeout the queue needs. @default Duration.seconds(0)
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * Concurrent invocations this trigger may use (2–1000). Not with `provisionedPollers` (Lambda
   * refuses both; the pollers bound the concurrency there).
   * @default 5, or none with `provisionedPollers`
   */
  readonly maxConcurrency?: number;
  /**
   * Provisioned mode: a minimum of event pollers kept ready and a maximum to scale to
   * (2 ≤ minimumPollers ≤ 200, minimumPollers ≤ maximumPollers ≤ 10,000; Lambda's
   * ProvisionedPollerConfig), for traffic that must not wait for Lambda's own scaling. Each poller
   * is billed while provisioned.
   * @default - none: Lambda scales the pollers (standard mode), bounded by `maxConcurrency`
   */
  readonly provisionedPollers?: ProvisionedPollers;
  /**
   * Where the consumer parks permanent failures, for a queue that is not a `QueueWithDlq`.
   * @default - a `QueueWithDlq`'s DLQ, or an `sqs.Queue`'s own `deadLetterQueue`; an imported
   * queue must be given one (synth fails: `SqsTriggerWithoutDlq`)
   */
  readonly deadLetterQueue?: sqs.IQueue;
  /** Also export the queue URL under this variable, e.g. `ORDERS_QUEUE_URL`. @default - none */
  readonly queueUrlEnv?: string;
  /** Also export the DLQ URL under this variable, besides `DLQ_URL`. @default - none */
  readonly dlqUrlEnv?: string;
}

/** What the trigger knows of its queue at synth; `undefined` is unknown (an imported queue). */
interface KnownQueue {
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue | undefined;
  readonly fifo: boolean;
  readonly path: string;
  readonly visibilityTimeoutSeconds: number | undefined;
  readonly heartbeat: boolean;
  readonly retryPath: TriggerRetryPath;
}

/** SQS's defaults for what a queue does not set (CreateQueue). */
const SQS_DEFAULT_VISIBILITY_SECONDS = 30;
const SQS_DEFAULT_RETENTION_SECONDS = 4 * 86_400;

/** A queue built in this app: its settings as its CloudFormation resource has them (tokens are unknown). */
function queueSettings(q: sqs.Queue): { visibility: number | undefined; retention: number | undefined } {
  const cfn = q.node.defaultChild as sqs.CfnQueue;
  const visibility = cfn.visibilityTimeout ?? SQS_DEFAULT_VISIBILITY_SECONDS;
  const retention = cfn.messageRetentionPeriod ?? SQS_DEFAULT_RETENTION_SECONDS;
  return {
    visibility: isKnown(visibility) ? visibility : undefined,
    retention: isKnown(retention) ? retention : undefined,
  };
}

/** What synth can know of the trigger's queue: everything of a `QueueWithDlq`, less of others. */
function knownQueue(source: SqsTriggerQueue, options: SqsTriggerOptions): KnownQueue {
  if (source instanceof QueueWithDlq) {
    return {
      queue: source.queue,
      deadLetterQueue: options.deadLetterQueue ?? source.deadLetterQueue,
      fifo: source.fifo,
      path: source.node.path,
      visibilityTimeoutSeconds: source.visibilityTimeout.toSeconds(),
      heartbeat: source.visibilityHeartbeat,
      retryPath: { description: source.retryPathDescription, seconds: source.retryPathSeconds },
    };
  }
  const built = source instanceof sqs.Queue ? source : undefined;
  const dlq = options.deadLetterQueue ?? built?.deadLetterQueue?.queue;
  const mine = built ? queueSettings(built) : { visibility: undefined, retention: undefined };
  const dlqRetention = dlq instanceof sqs.Queue ? queueSettings(dlq).retention : undefined;
  const seconds =
    mine.retention !== undefined && dlqRetention !== undefined
      ? sqsRetryPathSeconds({ retentionSeconds: mine.retention, dlqRetentionSeconds: dlqRetention })
      : undefined;
  const description =
    seconds !== undefined
      ? `queue ${source.node.path}: retention ${formatSeconds(mine.retention!)} + parked in the DLQ ${formatSeconds(dlqRetention!)} + redriven ${formatSeconds(mine.retention!)}`
      : `queue ${source.node.path}: retention unknown at synth (imported)`;
  return {
    queue: source,
    deadLetterQueue: dlq,
    fifo: source.fifo,
    path: source.node.path,
    visibilityTimeoutSeconds: mine.visibility,
    heartbeat: false,
    retryPath: { description, seconds },
  };
}

/**
 * An SQS trigger with the library's rules, for any queue: ReportBatchItemFailures, batch size and
 * window, maximum concurrency or provisioned pollers; the queue's visibility timeout checked
 * against the function's timeout (≥ 6 × timeout + window, or sized for the heartbeat); permanent
 * failures parked in the dead-letter queue at once (`DLQ_URL`, send granted); a healthy record on
 * its last receive requeued on a standard queue (send granted on the queue). What synth cannot
 * read of an imported queue (its visibility timeout, its retention) is said as a warning and left
 * unchecked; its dead-letter queue must be given. Bind it with `consumer.addTrigger(trigger)`.
 */
export class SqsTrigger implements IConsumerTrigger {
  /** The event source, once bound. */
  eventSource: SqsEventSource | undefined;

  /** The queue the trigger reads. */
  readonly queue: SqsTriggerQueue;
  private readonly options: SqsTriggerOptions;

  /** A trigger for `queue`; nothing is created until it is bound. */
  constructor(queue: SqsTriggerQueue, options: SqsTriggerOptions = {}) {
    this.queue = queue;
    this.options = options;
  }

  /**
   * Adds the event source, grants and variables to `consumer`, checking the rules; throws
   * `ConsumerRuleError` when one is broken (e.g. `SqsTriggerWithoutDlq`).
   */
  bind(consumer: ConsumerFunctionBase): void {
    const q = knownQueue(this.queue, this.options);
    const window = this.options.maxBatchingWindow ?? Duration.seconds(0);
    const pollers = this.options.provisionedPollers;
    // Lambda takes either: provisioned pollers bound the concurrency themselves.
    const maxConcurrency = this.options.maxConcurrency ?? (pollers ? undefined : 5);
    const batchSize = this.options.batchSize ?? 10;
    checkSqsTrigger({
      fifo: q.fifo,
      batchSize,
      batchingWindowSeconds: window.toSeconds(),
      ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
      ...(pollers ? { provisionedPollers: pollers } : {}),
      path: consumer.node.path,
    });
    this.checkQueue(consumer, q, window);
    // The DLQ is the consumer's DLQ_URL: a stream trigger of the same function may not name another.
    claimParkingQueue(consumer, q.deadLetterQueue!, "sqs");
    this.eventSource = new SqsEventSource(q.queue, {
      batchSize,
      ...(window.isUnresolved() || window.toSeconds() > 0 ? { maxBatchingWindow: window } : {}),
      reportBatchItemFailures: true,
      // Lambda's event counts for the mapping (polled, filtered, failed, dropped) in CloudWatch.
      metricsConfig: { metrics: [lambda.MetricType.EVENT_COUNT] },
      ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
      ...(pollers && pollersCdkChecks(pollers) ? { provisionedPollerConfig: pollers } : {}),
    });
    consumer.function.addEventSource(this.eventSource);
    if (pollers && !pollersCdkChecks(pollers)) overridePollers(consumer.function, this.eventSource, pollers);
    this.grantAndExport(consumer, q);
    consumer.addRetryPath(q.retryPath);
  }

  /** The queue's rules: a dead-letter queue, and a visibility timeout the consumer's timeout fits. */
  private checkQueue(consumer: ConsumerFunctionBase, q: KnownQueue, window: Duration): void {
    if (!q.deadLetterQueue) {
      throw new ConsumerRuleError(
        "SqsTriggerWithoutDlq",
        `queue ${q.path} has no dead-letter queue: the consumer parks permanent failures there, with their ` +
          "context, and a queue without one would retry them until they expire. Use QueueWithDlq, give the " +
          "sqs.Queue a deadLetterQueue, or pass `deadLetterQueue` to the trigger.",
        consumer.node.path,
      );
    }
    if (q.retryPath.seconds === undefined) {
      Annotations.of(consumer).addWarningV2(
        "reliable-consumers:sqsTrigger:retentionUnchecked",
        `the retention of ${q.path} or of its dead-letter queue is not known at synth: the dedup window is ` +
          "not checked against this trigger's retry path (retention + parked in the DLQ + redriven).",
      );
    }
    if (q.visibilityTimeoutSeconds === undefined) {
      Annotations.of(consumer).addWarningV2(
        "reliable-consumers:sqsTrigger:visibilityUnchecked",
        `the visibility timeout of ${q.path} is not known at synth and is not checked: it must be at least ` +
          `6 × the function timeout + the batching window (or sized for the visibility heartbeat).`,
      );
      return;
    }
    checkVisibilityTimeout({
      queue: q.path,
      visibilityTimeoutSeconds: q.visibilityTimeoutSeconds,
      consumer: consumer.consumerName,
      functionTimeoutSeconds: consumer.timeout.toSeconds(),
      batchingWindowSeconds: window.toSeconds(),
      heartbeat: q.heartbeat,
      path: consumer.node.path,
    });
  }

  /** Send to the DLQ (parking) and, on a standard queue, to the queue itself (a healthy requeue). */
  private grantAndExport(consumer: ConsumerFunctionBase, q: KnownQueue): void {
    const dlq = q.deadLetterQueue!;
    dlq.grantSendMessages(consumer.function);
    // On a standard queue, a healthy record on its last receive (held by another invocation, or not
    // started for lack of time) is sent again to this queue as a fresh copy (healthyRequeue.ts,
    // requeueHealthy), so it never reaches the DLQ without having failed. FIFO parks it instead.
    if (!q.fifo) q.queue.grantSendMessages(consumer.function);
    consumer.addEnvironment(LAMBDA_ENV.dlqUrl, dlq.queueUrl);
    if (this.options.queueUrlEnv) consumer.addEnvironment(this.options.queueUrlEnv, q.queue.queueUrl);
    if (this.options.dlqUrlEnv) consumer.addEnvironment(this.options.dlqUrlEnv, dlq.queueUrl);
  }
}

/** aws-cdk-lib checks SQS maximum pollers against 2,000, an older limit than Lambda's 10,000. */
const pollersCdkChecks = (pollers: ProvisionedPollers) =>
  !(isKnown(pollers.maximumPollers) && pollers.maximumPollers > 2000);

/** Above aws-cdk-lib's limit the poller config is set on the CloudFormation resource instead. */
function overridePollers(fn: lambda.Function, source: SqsEventSource, pollers: ProvisionedPollers): void {
  const mapping = fn.node.children.find(
    (c): c is lambda.EventSourceMapping =>
      c instanceof lambda.EventSourceMapping && c.eventSourceMappingId === source.eventSourceMappingId,
  );
  (mapping?.node.defaultChild as lambda.CfnEventSourceMapping | undefined)?.addPropertyOverride(
    "ProvisionedPollerConfig",
    { MinimumPollers: pollers.minimumPollers, MaximumPollers: pollers.maximumPollers },
  );
}
