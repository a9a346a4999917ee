/**
 * The stream consumers' one adapter of `runBatch`, shared by Kinesis and DynamoDB Streams: each
 * supplies its `StreamSource` (how to read a record, where it sits, its ordering key, its payload
 * for parking), and this builds the batch adapter: lanes per shard or per key, failures parked or
 * handed back (`streamFailures.ts`), and the answer in the stream shape (`streamAnswer.ts`).
 *
 * What a stream does not have, and is not faked: no visibility (a handed-back record comes back
 * when Lambda resends its shard, not after a backoff of ours), no requeue of a healthy record (a
 * record is resent only from the checkpoint, with everything after it), and no receive count.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Context } from "aws-lambda";
import type { RecordPlan } from "../batch/batchPlan.ts";
import type { Timer } from "../batch/lambdaDeadline.ts";
import { done } from "../batch/recordOutcome.ts";
import {
  type BatchAdapter,
  type BatchRecordContext,
  createBatchConsumer,
  runBatch,
} from "../batch/runBatch.ts";
import { withDefaults } from "../core/defaults.ts";
import type { Envelope, RecordSource } from "../core/envelope.ts";
import type { DuplicateHandler, IdempotencySetting } from "../dedup/idempotency.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { type StreamBatchResponse, type StreamCoordinates, streamBatchResponse } from "./streamAnswer.ts";
import { type FailureSource, failStreamRecord } from "./streamFailures.ts";
import { type StreamOrdering, streamLaneOf } from "./streamLanes.ts";

/** The defaults of both stream consumers, resolved once when one is created. */
export const STREAM_CONSUMER_DEFAULTS = {
  /** Per shard: a shard's records one after another. */
  ordering: "shard" as StreamOrdering,
  /** Records in flight at once (keys with `ordering: "key"`). */
  concurrency: 10,
  /** No record is started when less Lambda time than this remains, ms. */
  timeMarginMs: 5000,
  /** Lambda time kept after the run for the completions and parking, ms. */
  settleReserveMs: 3000,
};

/** The route a parked record's dedup record keeps (`DedupStore.recordRoute`). */
const PARKED_ROUTE = "parked";

/** A record's place as one string: the delivery its claims are made under. */
const coordinatesKey = (c: StreamCoordinates) => `${c.streamArn}/${c.shardId ?? ""}/${c.sequenceNumber}`;

/** The delivery of a decoded stream record (its envelope's source). */
function deliveryOf(source: RecordSource): string | undefined {
  if (source.kind === "kinesis") return coordinatesKey(source);
  if (source.kind === "dynamodb-stream") return coordinatesKey({ ...source, shardId: undefined });
  return undefined;
}

/** What one stream trigger reads differently. */
export interface StreamSource<R, T, E extends Envelope<T>> extends FailureSource<R> {
  /** The event's records, after its shape was checked (throws UnknownEventShapeError). */
  readonly recordsOf: (event: unknown) => ReadonlyArray<R>;
  /** Reads one record into its envelope; a throw is bad input. */
  readonly decode: (record: R) => Promise<E>;
  /** A record acked unseen (no claim, no handler): the DynamoDB consumer's `eventNames` filter. */
  readonly skip?: (record: R) => boolean;
}

/** The options both stream consumers take (each adds how its records are read). */
export interface StreamConsumerOptions<T, R> {
  /**
   * The consuming service: the default dedup scope and the `x-consumer` of what it parks.
   * @default CONSUMER_NAME (set by `ConsumerFunction`), else the function name
   */
  readonly consumer?: string;
  /**
   * Dedup on DynamoDB; `tableName` defaults to DEDUP_TABLE_NAME, `windowSeconds` to
   * DEDUP_WINDOW_SECONDS and `scope` to `consumer`. Pass a DedupStore to share one, or `false` for
   * handlers that are idempotent by nature (then every record after a checkpoint that Lambda
   * resends runs again). Keep the window longer than the records' age limit
   * (`MaximumRecordAgeInSeconds`, else the stream's retention).
   */
  readonly idempotency?: IdempotencySetting;
  /**
   * `shard`: a shard's records one after another; a failure stops the rest of the batch.
   * `key`: within a shard, different keys (the Kinesis partition key, the DynamoDB item's key) run
   * side by side, each in order; a failure stops only its key.
   * @default "shard"
   */
  readonly ordering?: StreamOrdering;
  /** Records in flight at once, a count (keys with `ordering: "key"`). @default 10 */
  readonly concurrency?: number;
  /** No record is started when less Lambda time than this remains, ms. @default 5000 */
  readonly timeMarginMs?: number;
  /**
   * Lambda time kept after the run for settling the batch (completions, parking), ms. At this much
   * left, running records' signals abort; at least the answer margin (500 ms) is kept.
   * @default 3000
   */
  readonly settleReserveMs?: number;
  /**
   * The SQS queue permanent failures and bad input are parked in, with their payload and context.
   * Without one they are handed back to Lambda (its retries, bisect and on-failure destination
   * take them), with a warning at init: never dropped.
   * @default DLQ_URL (set by the CDK trigger)
   */
  readonly parkingQueueUrl?: string;
  /**
   * Called for a record the dedup store already has as done (a resent record after the
   * checkpoint), with the first run's stored result when `idempotency.storeResult` kept it.
   */
  readonly onDuplicate?: DuplicateHandler<T, BatchRecordContext<R>>;
  /** The SQS client that parks. */
  readonly sqsClient: SQSClient;
  /** The DynamoDB client of the dedup store. */
  readonly dynamodbClient: DynamoDBClient;
  /** Logs and metrics. */
  readonly telemetry: Telemetry;
  /** Injectable clock (tests). @default Date.now */
  readonly now?: () => number;
  /** Injectable timer for the invocation's deadlines (tests). @default setTimeout */
  readonly timer?: Timer;
}

/** Creates the per-container state once; returns the per-batch function. */
export function createStreamBatchProcessor<R, T, E extends Envelope<T>>(
  handler: (envelope: E, ctx: BatchRecordContext<R>) => unknown,
  options: StreamConsumerOptions<T, R>,
  source: StreamSource<R, T, E>,
) {
  const { telemetry } = options;
  const settings = withDefaults(STREAM_CONSUMER_DEFAULTS, options);
  const batch = createBatchConsumer<R, T, E>(handler, options, settings);
  const parkingUrl = options.parkingQueueUrl ?? batch.env.dlqUrl;
  // Once per container, at init: what it means to have nowhere to park.
  if (parkingUrl === undefined)
    telemetry.logger.warn(
      "no parking queue (DLQ_URL or parkingQueueUrl): permanent failures and bad input are handed back to Lambda, which retries them and then gives them to the mapping's on-failure destination without their payload",
    );
  const skip = source.skip;
  type Plan = RecordPlan<R, T, E>;
  const laneOf = (r: R) => streamLaneOf(settings.ordering, source.coordinates(r), source.orderingKey(r));
  const now = options.now ?? Date.now;

  return async function processBatch(
    event: unknown,
    context: Context,
    lambdaSignal?: AbortSignal,
  ): Promise<StreamBatchResponse> {
    const records = source.recordsOf(event);
    const opened = batch.open(context, lambdaSignal);
    // A record's claims are made under its coordinates, which Lambda's every resend of it shares.
    const invocation = opened.claims
      ? { ...opened, claims: { ...opened.claims, deliveryOf: (e: Envelope) => deliveryOf(e.source) } }
      : opened;
    const failures = {
      source,
      sqs: options.sqsClient,
      parkingUrl,
      consumer: invocation.consumer,
      telemetry,
      deadline: invocation.deadline.settle,
      // Until just past the lease (a claim takes a lease that ended before now), keeping the time
      // margin; the run deadline ends the wait.
      waitForLease: async (untilMs: number) => {
        const ms = Math.min(untilMs + 1 - now(), invocation.remainingMs() - settings.timeMarginMs);
        if (ms > 0) await sleep(ms, undefined, { signal: invocation.deadline.run }).catch(() => undefined);
      },
    };
    const adapter: BatchAdapter<R, T, E, StreamBatchResponse> = {
      decode: source.decode,
      laneOf: (p) => laneOf(p.record),
      fail: (p, error, retryAtMs) => failStreamRecord(failures, p, error, retryAtMs),
      // In its lane's turn, not up front: with per-shard order, bad input that cannot be parked
      // stops the records after it like any failure.
      reject: (p, error) => failStreamRecord(failures, p, error),
      ...(skip ? { lead: (p: Plan) => (skip(p.record) ? done("processed") : undefined) } : {}),
      // With a dedup store, a parked record's park is recorded as its route under its delivery: a
      // resend from an earlier checkpoint recognises it instead of parking it again.
      ...(invocation.claims
        ? {
            routeOf: (p: Plan) =>
              p.outcome?.kind === "done" && p.outcome.why === "routed" ? PARKED_ROUTE : undefined,
            recognised: () => {
              telemetry.count(METRIC.routedRecognised);
              return done("routed");
            },
            undecodedClaimOf: (r: R) => {
              const delivery = coordinatesKey(source.coordinates(r));
              return { key: `undecoded@${delivery}`, delivery };
            },
          }
        : {}),
      // Every record is claimed ahead in one go (the store coalesces the claims), except those acked unseen.
      claimAhead: skip ? (p) => !skip(p.record) : () => true,
      describe: source.describe,
      answer: (plans) => streamBatchResponse(plans, source.coordinates),
    };
    return runBatch(records, adapter, batch.settings, invocation);
  };
}
