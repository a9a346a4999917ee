import { setTimeout as sleepMs } from "node:timers/promises";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Context } from "aws-lambda";
import type { RecordPlan } from "../batch/batchPlan.ts";
import { runReserveMs, type Timer } from "../batch/lambdaDeadline.ts";
import { done } from "../batch/recordOutcome.ts";
import {
  type BatchAdapter,
  type BatchRecordContext,
  createBatchConsumer,
  runBatch,
} from "../batch/runBatch.ts";
import { withDefaults } from "../core/defaults.ts";
import type { Envelope } from "../core/envelope.ts";
import type { DuplicateHandler, IdempotencyOptions, IdempotencySetting } from "../dedup/idempotency.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import { type KafkaEnvelope, type KafkaEnvelopeOptions, toKafkaEnvelope } from "./kafkaEnvelope.ts";
import { kafkaRouting } from "./kafkaRouting.ts";
import { keyLaneOf } from "./keyLanes.ts";
import { lambdaSchemaRegistryFromEnv } from "./lambdaDecoded.ts";
import { type KafkaRecordView, readKafkaEvent } from "./mskEvent.ts";
import type { KafkaBatchResponse } from "./partialResponse.ts";
import type { KafkaProducer } from "./producer.ts";
import { createRetryLadder, type RetryLadder, topicRole } from "./retryLadder.ts";

export { KafkaBatchIncompleteError } from "./errors.ts";

/** The same settings as the SQS consumer's; `true` for `payloadHash` hashes the raw value. */
export type KafkaIdempotencyOptions = IdempotencyOptions;

/** The record, the Lambda context, and a signal that aborts when its lease is lost or the time is up. */
export type KafkaRecordContext = BatchRecordContext<KafkaRecordView>;

/** Your per-record function: runs once per Kafka record, with its envelope and context. */
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
  settleReserveMs: 3000,
};

/** Options of the Kafka consumer (`kafkaConsumer`, `createKafkaBatchProcessor`). */
export interface KafkaConsumerOptions<T> extends KafkaEnvelopeOptions<T> {
  /**
   * The consuming service: the `x-consumer` header and the default dedup scope.
   * @default CONSUMER_NAME (set by `ConsumerFunction`), else the function name
   */
  readonly consumer?: string;
  /**
   * Dedup on DynamoDB; `tableName` defaults to DEDUP_TABLE_NAME, `windowSeconds` to
   * DEDUP_WINDOW_SECONDS and `scope` to `consumer`. Pass a DedupStore to share one, or `false` for
   * handlers that are idempotent by nature. The store also records where a routed record went, so
   * a redelivery of it is acked instead of being run or routed again; with `false`, a redelivery
   * (Lambda resuming a partition below a routed record) runs every record again and routes a routed
   * one a second time.
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
  /**
   * Lambda time kept after the run for settling the batch (ms): the completions, the produce of
   * routed records to the retry and dead-letter topics and their routes, each bounded by the
   * settlement deadline (`lambdaDeadline.ts`). At this much left, running records' signals abort
   * (`RecordTimeoutError`); a record still running halfway to the answer margin is handed back
   * unfinished. At least the answer margin (500 ms) is kept whatever the value.
   * @default KAFKA_CONSUMER_DEFAULTS.settleReserveMs
   */
  readonly settleReserveMs?: number;
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
  /** Injectable timer for the invocation's deadlines (tests). @default setTimeout */
  readonly timer?: Timer;
}

type Plan<T> = RecordPlan<KafkaRecordView, T, KafkaEnvelope<T>>;

/**
 * The delivery a Kafka record's claims are made under: its coordinates, which every redelivery of
 * the record shares (a copy on a retry topic has its own). The dedup store records it with the
 * route of a routed record, so a redelivery of that record is recognised (`routed`); and a lease
 * found under it is this record's own, held by another invocation: one that received the same
 * offset at the same time (AWS promises at-least-once delivery and nothing about concurrency; a
 * poller rebalance can hand one offset to two invocations at once), or one that died holding it.
 * The lease is never taken over, since the first could be running its effect right now (issue 34
 * item 10); the record is handed back to Lambda instead (`kafkaRouting.fail`), after waiting what
 * the invocation may for the lease to end. A dead invocation's lease ends within the lease length,
 * so its record then runs again under Lambda's eyes, which retries, counts and finally
 * dead-letters a record that keeps crashing; it never goes round the ladder as "in progress
 * elsewhere", which would repeat a crash a lease length apart for ever (issue 26 item 4).
 */
const kafkaDelivery = (e: Envelope): string | undefined =>
  e.source.kind === "kafka" ? `${e.source.topic}:${e.source.partition}:${e.source.offset}` : undefined;

/** A record's `topic:partition:offset`, the delivery its claims are made under. */
const kafkaCoordinates = (v: KafkaRecordView) => `${v.topic}:${v.partition}:${v.offset}`;

/** Creates the per-container state (dedup stores, ladder) once; returns the per-batch function. */
export function createKafkaBatchProcessor<T>(
  handler: KafkaRecordHandler<T>,
  options: KafkaConsumerOptions<T>,
) {
  const { telemetry, producer } = options;
  const settings = withDefaults(KAFKA_CONSUMER_DEFAULTS, options);
  const batch = createBatchConsumer<KafkaRecordView, T, KafkaEnvelope<T>>(handler, options, settings);
  const ladder: RetryLadder =
    options.retry && "delaysMs" in options.retry ? options.retry : createRetryLadder(options.retry ?? {});
  const sleep = options.sleep ?? ((ms: number) => sleepMs(ms));
  const maxDueWaitMs = options.maxDueWaitMs;
  // A retry record waits to come due only while the run may go on: never into the settlement reserve.
  const timeMarginMs = Math.max(settings.timeMarginMs, runReserveMs(settings.settleReserveMs));
  // Read once: what the mapping's registry hands over decoded, for reading records and their copies.
  const lambdaSchemaRegistry = options.lambdaSchemaRegistry ?? lambdaSchemaRegistryFromEnv() ?? false;
  const envelopeOptions = { ...options, lambdaSchemaRegistry };
  const routingDeps = {
    ...settings,
    timeMarginMs,
    ladder,
    producer,
    telemetry,
    now: batch.now,
    sleep,
    maxDueWaitMs,
    lambdaSchemaRegistry,
  };
  const isRetryTopic = (v: KafkaRecordView) => topicRole(ladder, v.topic).kind === "retry";
  // A tombstone (null value) is delivered unless the consumer opted to skip it.
  const skipped = (p: Plan<T>) =>
    options.tombstones === "skip" && p.decoded.ok && p.decoded.envelope.tombstone;
  const laneOf = (p: Plan<T>) =>
    settings.ordering === "key"
      ? (keyLaneOf(p.record) ?? `${p.record.partitionKey}|∅`)
      : p.record.partitionKey;

  return async function processBatch(
    event: unknown,
    context: Context,
    lambdaSignal?: AbortSignal,
  ): Promise<KafkaBatchResponse> {
    const views = readKafkaEvent(event);
    const opened = batch.open(context, lambdaSignal);
    // A record's claims are made under its coordinates (`kafkaDelivery`).
    const invocation = opened.claims
      ? { ...opened, claims: { ...opened.claims, deliveryOf: kafkaDelivery } }
      : opened;
    const routing = kafkaRouting({
      ...routingDeps,
      consumer: invocation.consumer,
      deadline: invocation.deadline.settle,
      remainingMs: invocation.remainingMs,
    });
    const adapter: BatchAdapter<KafkaRecordView, T, KafkaEnvelope<T>, KafkaBatchResponse> = {
      decode: (v) => toKafkaEnvelope(v, envelopeOptions),
      laneOf,
      fail: routing.fail,
      // Bad input goes to the dead-letter topic in its lane's turn, behind its key's retry path.
      reject: routing.fail,
      lead: (p) => (skipped(p) ? done("processed") : undefined),
      follow: routing.follow,
      // With a dedup store, a routed record's route is recorded, so a redelivery (Lambda resuming
      // the partition below it, or retrying the batch whole) neither runs nor routes it again.
      ...(opened.claims ? { routeOf: routing.routeOf, recognised: routing.recognised } : {}),
      undecodedClaimOf: (v) => ({ key: `undecoded@${kafkaCoordinates(v)}`, delivery: kafkaCoordinates(v) }),
      beforeClaim: (p) => routing.untilDue(p.record, invocation.remainingMs),
      // Records of retry topics are claimed just in time: they may wait to come due.
      claimAhead: settings.claimAhead ? (p) => !isRetryTopic(p.record) : undefined,
      afterRun: routing.produce,
      describe: routing.describe,
      answer: (plans) => routing.answer(plans, settings.reportBatchItemFailures),
    };
    return runBatch(views, adapter, batch.settings, invocation);
  };
}
