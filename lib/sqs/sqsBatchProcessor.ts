import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSRecord } from "aws-lambda";
import { decodeRecords, planBatch, type RecordPlan } from "../batch/batchPlan.ts";
import { claimAhead, releaseUnused, settleCompletions } from "../batch/recordClaims.ts";
import type { RecordOutcome } from "../batch/recordOutcome.ts";
import { openInvocation, runPlannedRecord, runPlans } from "../batch/recordRun.ts";
import { readConsumerEnv } from "../core/consumerEnv.ts";
import { withDefaults } from "../core/defaults.ts";
import type { Envelope } from "../core/envelope.ts";
import { createIdempotency, type DuplicateHandler, type IdempotencySetting } from "../dedup/idempotency.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
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
  /** Visibility backoff for transient failures: base 2 s, cap 900 s, full jitter. */
  backoff: DEFAULT_BACKOFF as BackoffPolicy,
};

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
  /** @default SQS_CONSUMER_DEFAULTS.concurrency */
  readonly concurrency?: number;
  /** @default SQS_CONSUMER_DEFAULTS.timeMarginMs */
  readonly timeMarginMs?: number;
  /** @default SQS_CONSUMER_DEFAULTS.backoff */
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
}

export interface RecordContext {
  readonly context: Context;
  readonly record: SQSRecord;
  /** Aborts when this record's lease is lost to another consumer, or the Lambda runs out of time: stop side effects then. */
  readonly signal: AbortSignal;
}

export type SqsRecordHandler<T> = (envelope: Envelope<T>, ctx: RecordContext) => Promise<unknown> | unknown;

type Plan<T> = RecordPlan<SQSRecord, T>;

/** Creates the per-container state (clients, caches, dedup stores) once; returns the per-batch function. */
export function createSqsBatchProcessor<T>(handler: SqsRecordHandler<T>, options: SqsConsumerOptions<T>) {
  const { sqsClient: sqs, telemetry } = options;
  const settings = withDefaults(SQS_CONSUMER_DEFAULTS, options);
  const env = readConsumerEnv();
  const now = options.now ?? Date.now;
  const resolver = new QueueResolver(sqs);
  const idempotency = createIdempotency(options.idempotency, options.dynamodbClient, env);
  const consumerDeps = { consumer: options.consumer ?? env.consumerName, idempotency, now };
  const deadLetterUrl = options.deadLetterQueueUrl ?? env.dlqUrl;
  const settlementDeps = { sqs, resolver, telemetry, backoff: settings.backoff, deadLetterUrl, now };
  const warn = (message: string) => (p: Plan<T>, error: unknown) =>
    telemetry.logger.warn(message, { messageId: p.record.messageId, error });

  return async function processBatch(
    event: unknown,
    context: Context,
    lambdaSignal?: AbortSignal,
  ): Promise<SQSBatchResponse> {
    assertSqsEvent(event);
    const records = event.Records;
    const { started, consumer, dedup, claims, deadline } = openInvocation(
      consumerDeps,
      context,
      lambdaSignal,
    );
    const settle = sqsSettlement({ ...settlementDeps, consumer });
    const plans = planBatch(
      records,
      await decodeRecords(records, (r) => toSqsEnvelope(r, options)),
      deadline.signal,
    );
    let heartbeat: VisibilityHeartbeat | undefined;

    const run = {
      claims,
      idempotency,
      telemetry,
      handler,
      contextOf: (p: Plan<T>) => ({ context, record: p.record, signal: p.signal }),
      fail: (p: Plan<T>, error: unknown, retryAtMs?: number) => settle.fail(p.record, error, retryAtMs),
      onDuplicate: options.onDuplicate,
      keepAlive: options.heartbeat !== false,
      onRenewError: () => telemetry.count(METRIC.heartbeatErrors),
      onReleaseError: warn("could not release the lease"),
    };
    // Bad input is parked; anything else runs the shared record stages.
    const runRecord = (p: Plan<T>): Promise<RecordOutcome> =>
      p.decoded.ok ? runPlannedRecord(p, p.decoded.envelope, run) : settle.park(p.record, p.decoded.error);

    try {
      for (const p of plans)
        if (p.decoded.ok && p.decoded.envelope.idSource === "broker")
          telemetry.count(METRIC.brokerIdFallback);
      const fifo = records.length > 0 && parseQueueArn(records[0]!.eventSourceARN).fifo;
      // Bad input is parked right away, before anything waits for a slot.
      await Promise.all(plans.map(async (p) => (p.outcome = p.decoded.ok ? undefined : await runRecord(p))));
      heartbeat = settle.startHeartbeat(records[0], {
        dedup,
        context,
        started,
        options: options.heartbeat,
      });
      const claimable = (p: Plan<T>) => !p.outcome && p.copy.kind === "first";
      if (run.claims) claimAhead(plans, run.claims, claimable);
      for (const p of plans)
        if (claimable(p)) heartbeat?.track(p.record.messageId, p.record.receiptHandle, undefined, () => {});
      await runPlans(plans, {
        laneOf: (p) => (fifo ? (p.record.attributes.MessageGroupId ?? "") : undefined),
        run: (p) => runRecord(p).finally(() => heartbeat?.untrack(p.record.messageId)),
        concurrency: settings.concurrency,
        canStart: () => context.getRemainingTimeInMillis() > settings.timeMarginMs,
        telemetry,
        onBug: warn("unexpected error"),
      });
      await releaseUnused(plans, dedup, warn("could not release the lease"));
      settle.completionsFailed(await settleCompletions(plans, dedup));
      await settle.requeueHealthy(plans, fifo);
    } catch (error) {
      // Outside record processing: fail only what did not finish.
      telemetry.logger.error("batch processing failed outside a record", { error });
      await settleCompletions(plans, dedup).catch(() => undefined);
    } finally {
      // Before the retry visibilities below: an extension landing after them would undo the backoff.
      await heartbeat?.stop();
      deadline.dispose();
    }
    const response = await settle.answer(plans);
    telemetry.count(METRIC.batchDurationMs, now() - started);
    return response;
  };
}
