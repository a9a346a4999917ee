import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSRecord } from "aws-lambda";
import type { RecordPlan } from "../batch/batchPlan.ts";
import type { Timer } from "../batch/lambdaDeadline.ts";
import type { Invocation } from "../batch/recordRun.ts";
import {
  type BatchAdapter,
  type BatchRecordContext,
  createBatchConsumer,
  type RunWatch,
  runBatch,
} from "../batch/runBatch.ts";
import { withDefaults } from "../core/defaults.ts";
import type { Envelope } from "../core/envelope.ts";
import type { DuplicateHandler, IdempotencySetting } from "../dedup/idempotency.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import { type BackoffPolicy, DEFAULT_BACKOFF } from "./backoff.ts";
import { QueueResolver } from "./queueResolver.ts";
import { type SqsEnvelopeOptions, toSqsEnvelope } from "./sqsEnvelope.ts";
import { assertSqsEvent, parseQueueArn } from "./sqsEvent.ts";
import { sqsSettlement } from "./sqsSettlement.ts";
import type { HeartbeatOptions, VisibilityHeartbeat } from "./visibilityHeartbeat.ts";

export type { IdempotencyOptions } from "../dedup/idempotency.ts";

/** The SQS consumer's defaults, resolved once when it is created. */
export const SQS_CONSUMER_DEFAULTS = {
  /** Records in flight at once (FIFO groups still run in order). The SDK keeps 50 sockets per client, so more only queues. */
  concurrency: 50,
  /** Stop starting records when less Lambda time than this remains (ms). */
  timeMarginMs: 5000,
  /**
   * Lambda time kept for what comes after the run (ms): the records that react to their signal at
   * the run deadline, then the completions, the requeue of healthy records, parking, the retry
   * visibilities, each bounded by the settlement deadline (`lambdaDeadline.ts`). About four
   * sequential round trips at a few hundred ms each under load, with room for an SDK retry, plus
   * the answer margin (500 ms).
   */
  settleReserveMs: 3000,
  /** Visibility backoff for transient failures: base 2 s, cap 900 s, full jitter. */
  backoff: DEFAULT_BACKOFF as BackoffPolicy,
};

/** Options of the SQS consumer (`sqsConsumer`, `createSqsBatchProcessor`). */
export interface SqsConsumerOptions<T> extends SqsEnvelopeOptions<T> {
  /**
   * The consuming service: the default dedup scope and the `x-consumer` of what it parks.
   * @default CONSUMER_NAME (set by `ConsumerFunction`), else the function name
   */
  readonly consumer?: string;
  /**
   * Dedup on DynamoDB; `tableName` defaults to DEDUP_TABLE_NAME, `windowSeconds` to
   * DEDUP_WINDOW_SECONDS and `scope` to `consumer`. Pass a DedupStore to share one, or `false` for
   * handlers that are idempotent by nature.
   */
  readonly idempotency?: IdempotencySetting;
  /**
   * Records in flight at once, a count (FIFO groups still run in order).
   * @default SQS_CONSUMER_DEFAULTS.concurrency (50)
   */
  readonly concurrency?: number;
  /**
   * No record is started when less Lambda time than this remains, ms.
   * @default SQS_CONSUMER_DEFAULTS.timeMarginMs (5000)
   */
  readonly timeMarginMs?: number;
  /**
   * Lambda time kept after the run for settling the batch (ms): at this much left, running
   * records' signals abort (`RecordTimeoutError`); a record still running halfway to the answer
   * margin is handed back unfinished. At least the answer margin (500 ms) is kept whatever the value.
   * @default SQS_CONSUMER_DEFAULTS.settleReserveMs
   */
  readonly settleReserveMs?: number;
  /**
   * The visibility backoff of transient failures.
   * @default SQS_CONSUMER_DEFAULTS.backoff (base 2 s, cap 900 s, full jitter)
   */
  readonly backoff?: BackoffPolicy;
  /** Where permanent failures go. @default DLQ_URL, else the source queue's RedrivePolicy target */
  readonly deadLetterQueueUrl?: string;
  /**
   * Visibility heartbeat for long records; it also keeps their dedup leases alive (on the shared
   * lease cadence, `LEASE_CADENCE`). `false` turns both off. @default on
   */
  readonly heartbeat?: HeartbeatOptions | false;
  /**
   * Called for a record the dedup store already has as done, with the first run's return value
   * when `idempotency.storeResult` kept it (to answer a duplicate as the first run did). A throw
   * retries the record. Not called for a copy inside one batch (the first has not finished yet).
   */
  readonly onDuplicate?: DuplicateHandler<T, RecordContext>;
  readonly sqsClient: SQSClient;
  readonly dynamodbClient: DynamoDBClient;
  readonly telemetry: Telemetry;
  /** Injectable clock (tests). */
  readonly now?: () => number;
  /** Injectable timer for the invocation's deadlines (tests). @default setTimeout */
  readonly timer?: Timer;
}

/** The record, the Lambda context, and a signal that aborts when its lease is lost or the time is up. */
export type RecordContext = BatchRecordContext<SQSRecord>;

/** Your per-record function: runs once per SQS record, with its envelope and context. */
export type SqsRecordHandler<T> = (envelope: Envelope<T>, ctx: RecordContext) => Promise<unknown> | unknown;

type Plan<T> = RecordPlan<SQSRecord, T>;

/** Creates the per-container state (clients, caches, dedup stores) once; returns the per-batch function. */
export function createSqsBatchProcessor<T>(handler: SqsRecordHandler<T>, options: SqsConsumerOptions<T>) {
  const { sqsClient: sqs, telemetry } = options;
  const settings = withDefaults(SQS_CONSUMER_DEFAULTS, options);
  const batch = createBatchConsumer<SQSRecord, T, Envelope<T>>(handler, options, settings);
  const resolver = new QueueResolver(sqs);
  const deadLetterUrl = options.deadLetterQueueUrl ?? batch.env.dlqUrl;
  const settlementDeps = {
    sqs,
    resolver,
    telemetry,
    backoff: settings.backoff,
    deadLetterUrl,
    now: batch.now,
  };

  return async function processBatch(
    event: unknown,
    context: Context,
    lambdaSignal?: AbortSignal,
  ): Promise<SQSBatchResponse> {
    assertSqsEvent(event);
    const invocation = batch.open(context, lambdaSignal);
    const settle = sqsSettlement({
      ...settlementDeps,
      consumer: invocation.consumer,
      deadline: invocation.deadline.settle,
    });
    const adapter = sqsAdapter<T>(event.Records, settle, options, invocation);
    return runBatch(event.Records, adapter, batch.settings, invocation);
  };
}

/**
 * What SQS does differently: bad input is parked up front; a FIFO queue's lane is its message
 * group; failures back off through visibility or are parked; one visibility heartbeat watches the
 * batch; healthy records on their last receive are requeued; the answer sets retry visibilities.
 */
function sqsAdapter<T>(
  records: ReadonlyArray<SQSRecord>,
  settle: ReturnType<typeof sqsSettlement>,
  options: SqsConsumerOptions<T>,
  invocation: Invocation,
): BatchAdapter<SQSRecord, T, Envelope<T>, SQSBatchResponse> {
  // Read when first needed, inside the runner: an ARN that is not a queue's fails the batch's answer, not the call.
  let fifo: boolean | undefined;
  const isFifo = () => (fifo ??= records.length > 0 && parseQueueArn(records[0]!.eventSourceARN).fifo);
  return {
    decode: (r) => toSqsEnvelope(r, options),
    laneOf: (p) => (isFifo() ? (p.record.attributes.MessageGroupId ?? "") : undefined),
    fail: (p, error, retryAtMs) => settle.fail(p.record, error, retryAtMs),
    reject: (p, error) => settle.park(p.record, error),
    rejectUpFront: true,
    claimAhead: () => true,
    keepLeases: options.heartbeat !== false,
    watch: heartbeatWatch(records, settle, options.heartbeat, invocation),
    afterRun: (plans) => settle.requeueHealthy(plans, isFifo()),
    describe: (r) => ({ messageId: r.messageId }),
    answer: (plans) => settle.answer(plans, isFifo()),
  };
}

/**
 * One visibility heartbeat for the batch, tracking every record of it until the answer. A record
 * that finished early (processed, parked, a copy of another) is still in flight: Lambda deletes it
 * only after the answer. Left unextended on a queue whose visibility timeout is near the function
 * timeout (what the heartbeat allows), it would come back while the batch still runs, to another
 * invocation: a processed one as a duplicate, a parked one (its lease given back) parked a second
 * time. So nothing is untracked when it finishes; the heartbeat stops before the answer, whose
 * retry visibilities then land last.
 */
function heartbeatWatch<T>(
  records: ReadonlyArray<SQSRecord>,
  settle: ReturnType<typeof sqsSettlement>,
  options: HeartbeatOptions | false | undefined,
  invocation: Invocation,
): RunWatch<Plan<T>> {
  let heartbeat: VisibilityHeartbeat | undefined;
  const { dedup, remainingMs, started } = invocation;
  return {
    start() {
      heartbeat = settle.startHeartbeat(records[0], { dedup, remainingMs, started, options });
      for (const r of records) heartbeat?.track(r.messageId, r.receiptHandle, undefined, () => {});
    },
    finished: () => undefined,
    stop: async () => heartbeat?.stop(),
  };
}
