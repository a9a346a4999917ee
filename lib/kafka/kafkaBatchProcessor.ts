import { setTimeout as sleepMs } from "node:timers/promises";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Context } from "aws-lambda";
import { decodeRecords, planBatch, type RecordPlan } from "../core/batchPlan.ts";
import { readConsumerEnv } from "../core/consumerEnv.ts";
import { withDefaults } from "../core/defaults.ts";
import type { Envelope } from "../core/envelope.ts";
import { describeError } from "../core/errors.ts";
import { done, type RecordOutcome } from "../core/recordOutcome.ts";
import {
  createIdempotency,
  type DuplicateHandler,
  type IdempotencyOptions,
  type IdempotencySetting,
} from "../dedup/idempotency.ts";
import { claimAhead, releaseUnused, settleCompletions } from "../dedup/recordClaims.ts";
import { openInvocation, runPlannedRecord, runPlans } from "../dedup/recordRun.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { type KafkaEnvelope, type KafkaEnvelopeOptions, toKafkaEnvelope } from "./kafkaEnvelope.ts";
import { kafkaRouting, keyLaneOf } from "./kafkaRouting.ts";
import { type KafkaRecordView, readKafkaEvent } from "./mskEvent.ts";
import type { KafkaBatchResponse } from "./partialResponse.ts";
import type { KafkaProducer } from "./producer.ts";
import { createRetryLadder, type RetryLadder, topicRole } from "./retryLadder.ts";

export { KafkaBatchIncompleteError } from "./errors.ts";

/** The same settings as the SQS consumer's; `true` for `payloadHash` hashes the raw value. */
export type KafkaIdempotencyOptions = IdempotencyOptions;

export interface KafkaRecordContext {
  readonly context: Context;
  readonly record: KafkaRecordView;
  /** Aborts when this record's dedup lease is lost to another consumer, or the Lambda runs out of time: stop side effects then. */
  readonly signal: AbortSignal;
}

export type KafkaRecordHandler<T> = (
  envelope: KafkaEnvelope<T>,
  ctx: KafkaRecordContext,
) => Promise<unknown> | unknown;

/** The Kafka consumer's defaults, resolved once when it is created. Each is described on its option. */
export const KAFKA_CONSUMER_DEFAULTS = {
  ordering: "partition" as "partition" | "key",
  concurrency: 10,
  failureMode: "retry-topics" as "retry-topics" | "partial-batch",
  keyOrder: true,
  reportBatchItemFailures: true,
  claimAhead: true,
  timeMarginMs: 5000,
};

export interface KafkaConsumerOptions<T> extends KafkaEnvelopeOptions<T> {
  /**
   * The consuming service: the `x-consumer` header and the default dedup scope.
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
   * `partition`: each partition in offset order, partitions side by side.
   * `key`: inside a partition, different Kafka keys run side by side; each key stays in order.
   * @default KAFKA_CONSUMER_DEFAULTS.ordering
   */
  readonly ordering?: "partition" | "key";
  /** Records in flight at once (partitions, or keys with `ordering: "key"`). @default KAFKA_CONSUMER_DEFAULTS.concurrency */
  readonly concurrency?: number;
  /**
   * `retry-topics`: a failed record goes up the retry ladder (or to the DLQ) and its partition moves on.
   * `partial-batch`: a transient failure is reported to Lambda, which redelivers the partition from
   * there (it blocks the partition); permanent failures still go to the dead-letter topic.
   * @default KAFKA_CONSUMER_DEFAULTS.failureMode
   */
  readonly failureMode?: "retry-topics" | "partial-batch";
  /** The ladder. @default delays 5s, 1m, 10m; topics `<topic>.retry.<delay>`, `<topic>.DLQ` */
  readonly retry?: RetryLadder | Parameters<typeof createRetryLadder>[0];
  /**
   * Once a key has a record on the retry path, its later records in the batch follow it there
   * instead of overtaking it. (A record that goes to the DLQ does not drag its key along.)
   * @default KAFKA_CONSUMER_DEFAULTS.keyOrder
   */
  readonly keyOrder?: boolean;
  /**
   * The mapping has `ReportBatchItemFailures`. When `false`, a batch with unfinished records throws
   * instead (Lambda retries it whole; finished records are then skipped as duplicates).
   * @default KAFKA_CONSUMER_DEFAULTS.reportBatchItemFailures
   */
  readonly reportBatchItemFailures?: boolean;
  /**
   * Claim the dedup keys of the whole batch up front (the store coalesces new keys into PartiQL
   * batches) instead of one claim per record on the record's critical path. A claim that has aged
   * past half its lease by the time its record starts is renewed (fenced) first, so a stale claim is
   * never acted on; claims of records that did not run are released before the batch ends. Records
   * of retry topics are always claimed just in time (they may wait to come due).
   * @default KAFKA_CONSUMER_DEFAULTS.claimAhead
   */
  readonly claimAhead?: boolean;
  /** Stop starting records (and waiting for due retries) when less Lambda time than this remains (ms). @default KAFKA_CONSUMER_DEFAULTS.timeMarginMs */
  readonly timeMarginMs?: number;
  /** Longest single wait for a retry record to come due. @default no cap besides the Lambda time */
  readonly maxDueWaitMs?: number;
  /** As the SQS consumer's `onDuplicate`: the first run's stored result for a duplicate. */
  readonly onDuplicate?: DuplicateHandler<T, KafkaRecordContext>;
  readonly producer: KafkaProducer;
  readonly dynamodbClient: DynamoDBClient;
  readonly telemetry: Telemetry;
  /** Injectable clock and sleep (tests). */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

type Plan<T> = RecordPlan<KafkaRecordView, T>;

/**
 * The claim holder of a Kafka record: its coordinates. Lambda gives a partition's records to one
 * invocation at a time and the same offset again only once that invocation ended, so a lease held
 * under these coordinates is one a crashed (out of memory, killed, timed-out) invocation left
 * behind. Taken over at once, the crash happens again under Lambda's eyes, which bisects, counts
 * and finally dead-letters the record; routed away as "in progress elsewhere" instead, a record
 * that kills the function would go round the ladder forever, one crash a lease length.
 */
const kafkaClaimHolder = (e: Envelope): string | undefined =>
  e.source.kind === "kafka" ? `${e.source.topic}:${e.source.partition}:${e.source.offset}` : undefined;

/** Creates the per-container state (dedup stores, ladder) once; returns the per-batch function. */
export function createKafkaBatchProcessor<T>(
  handler: KafkaRecordHandler<T>,
  options: KafkaConsumerOptions<T>,
) {
  const { telemetry, producer } = options;
  const settings = withDefaults(KAFKA_CONSUMER_DEFAULTS, options);
  const env = readConsumerEnv();
  const ladder: RetryLadder =
    options.retry && "delaysMs" in options.retry ? options.retry : createRetryLadder(options.retry ?? {});
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => sleepMs(ms));
  const idempotency = createIdempotency(options.idempotency, options.dynamodbClient, env);
  const consumerDeps = { consumer: options.consumer ?? env.consumerName, idempotency, now };
  const maxDueWaitMs = options.maxDueWaitMs;
  const routingDeps = { ...settings, ladder, producer, telemetry, now, sleep, maxDueWaitMs };
  const isRetryTopic = (v: KafkaRecordView) => topicRole(ladder, v.topic).kind === "retry";

  return async function processBatch(
    event: unknown,
    context: Context,
    lambdaSignal?: AbortSignal,
  ): Promise<KafkaBatchResponse> {
    const views = readKafkaEvent(event);
    const opened = openInvocation(consumerDeps, context, lambdaSignal);
    const { started, consumer, dedup, deadline } = opened;
    // A record's coordinates hold its claim: its redelivery after a crash takes the lease over.
    const deps = opened.claims && { ...opened.claims, holderOf: kafkaClaimHolder };
    const routing = kafkaRouting({ ...routingDeps, consumer });
    const remaining = () =>
      typeof context.getRemainingTimeInMillis === "function"
        ? context.getRemainingTimeInMillis()
        : Number.POSITIVE_INFINITY;
    const plans = planBatch(
      views,
      await decodeRecords(views, (v) => toKafkaEnvelope(v, options)),
      deadline.signal,
    );
    const fresh = (p: Plan<T>) => p.decoded.ok && p.copy.kind === "first";
    if (deps && settings.claimAhead) claimAhead(plans, deps, (p) => fresh(p) && !isRetryTopic(p.record));

    const run = {
      claims: deps,
      idempotency,
      telemetry,
      // Every envelope here came from toKafkaEnvelope (decodeRecords above): a KafkaEnvelope.
      handler: (envelope: Envelope<T>, ctx: KafkaRecordContext) => handler(envelope as KafkaEnvelope<T>, ctx),
      contextOf: (p: Plan<T>) => ({ context, record: p.record, signal: p.signal }),
      fail: routing.fail,
      onDuplicate: options.onDuplicate,
      beforeClaim: async (p: Plan<T>, envelope: Envelope<T>) => {
        const notDue = await routing.untilDue(p.record, remaining);
        if (!notDue && envelope.idSource === "broker") telemetry.count(METRIC.brokerIdFallback);
        return notDue;
      },
      onReleaseError: (p: Plan<T>, error: unknown) =>
        routing.log("could not release the dedup lease", p.record, { error: describeError(error) }),
    };
    // A follower of its key's retry path goes where its key went; bad input to the dead-letter topic.
    // A tombstone (null value) is delivered unless the consumer opted to skip it.
    const skipped = (p: Plan<T>) =>
      options.tombstones === "skip" && p.decoded.ok && (p.decoded.envelope as KafkaEnvelope<T>).tombstone;
    const runRecord = (p: Plan<T>): Promise<RecordOutcome> | RecordOutcome =>
      routing.follow(p) ??
      (skipped(p)
        ? done("processed")
        : p.decoded.ok
          ? runPlannedRecord(p, p.decoded.envelope, run)
          : routing.fail(p, p.decoded.error));

    await runPlans(plans, {
      laneOf: (p) =>
        settings.ordering === "key"
          ? (keyLaneOf(p.record) ?? `${p.record.partitionKey}|∅`)
          : p.record.partitionKey,
      run: runRecord,
      concurrency: settings.concurrency,
      canStart: () => remaining() > settings.timeMarginMs,
      telemetry,
      onBug: (p, error) => routing.log("unexpected error", p.record, { error: describeError(error) }),
    });
    await releaseUnused(plans, dedup, (p, error) =>
      routing.log("could not release an unused dedup claim", p.record, { error: describeError(error) }),
    );
    // Completions are fenced PartiQL UPDATEs, batched by the store: all of them land before we ack.
    routing.completionsFailed(await settleCompletions(plans, dedup));
    await routing.produce();
    deadline.dispose();
    telemetry.count(METRIC.batchDurationMs, now() - started);
    return routing.answer(plans, settings.reportBatchItemFailures);
  };
}
