import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from "aws-lambda";
import { OUTBOX_ENV } from "../env.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import { assertDynamoDbStreamEvent } from "../streams/dynamodbStreamEvent.ts";
import {
  AGGREGATE_ORDER_DEFAULTS,
  createOrderCheck,
  createPublishedSequences,
  type OrderCheck,
} from "./aggregateOrder.ts";
import { createOutboxPublisher, type OutboxPublisher, type OutboxPublisherOptions } from "./publisher.ts";
import { type EventParsed, parseRelayRecord, type RelayBatch, relayAnswer } from "./relayBatch.ts";
import { relayOrderCheck, rememberPublished } from "./relayOrder.ts";
import { countReport, parkAll, type RelayReport, sortOutcomes } from "./relaySettle.ts";
import { clearPending, eventKeyOf } from "./settle.ts";

export type { RelayReport } from "./relaySettle.ts";

/**
 * The outbox relay: a Lambda handler for the app table's DynamoDB stream.
 *
 * For each batch (one shard, in stream order):
 * 0. Puts each aggregate's events in their own order (the stream keeps order per item only), and
 *    holds back (leaves pending, acks) an event whose predecessor is still pending or parked, with
 *    the rest of its aggregate (aggregateOrder.ts): order per aggregate when the mapping gave up on
 *    older records, or one was parked. The sweeper publishes them once the older ones are out. It
 *    reads the table only where the order is in doubt: an event whose predecessor this container
 *    published, or that follows it in the batch, needs no read.
 * 1. Keeps the INSERTs of pending outbox events. Anything else is skipped and counted (the
 *    event-source filter OUTBOX_STREAM_FILTER_PATTERN normally keeps it away); a non-outbox INSERT
 *    is logged as NotAnOutboxItemError, because it means the filter is missing.
 * 2. Publishes the events (see publisher.ts: Kafka keyed by aggregate id, SQS batches of 10, FIFO
 *    groups by aggregate id with the event id as deduplication id).
 * 3. Parks the events that can never be published (malformed item, unknown destination, rejected
 *    by the broker): to the parking queue if configured (a reference when the image does not fit
 *    it), and marked in the table. Never dropped. A parked event holds its aggregate's later ones.
 * 4. Clears `pending` on the published events (BatchWriteItem, 25 a call).
 * 5. Returns `batchItemFailures` with the first record that failed (transiently, or whose parking
 *    failed): Lambda checkpoints there and retries it and everything after it, in order. Later
 *    records that were published are published again on the retry: duplicates with the same event
 *    id, which consumers drop.
 */
export interface OutboxRelayOptions {
  /** The app table (to clear and park). @default APP_TABLE_NAME, else the table named in the stream ARN */
  readonly tableName?: string;
  /** The DynamoDB client for the app table. @default a new DynamoDBClient */
  readonly client?: DynamoDBClient;
  /** The publisher to send events with. @default a publisher built from `publisherOptions` */
  readonly publisher?: OutboxPublisher;
  /**
   * How to build the publisher when `publisher` is not given (routes, clients, limits).
   * @default - the publisher's defaults
   */
  readonly publisherOptions?: OutboxPublisherOptions;
  /** Where events that can never be published go, with their context. @default OUTBOX_PARKING_QUEUE_URL */
  readonly parkingQueueUrl?: string;
  /** The client parked events are sent to the parking queue with. @default createSqsClient() */
  readonly sqs?: SQSClient;
  /**
   * Where the relay logs and counts (OutboxPublished, OutboxParked, …).
   * @default - none: no logs, no metrics
   */
  readonly telemetry?: Telemetry;
  /** The `x-consumer` of parked events. @default "outbox-relay" */
  readonly consumerName?: string;
  /**
   * Aggregates whose last published sequence number this container keeps (about 100 bytes each):
   * their next event goes with no read. `false`: none, every batch reads each aggregate's
   * predecessor once. @default AGGREGATE_ORDER_DEFAULTS.cachedAggregates (10 000)
   */
  readonly aggregateCache?: number | false;
  /**
   * Whether the table may hold outbox events written without numbers (`aggregateSequence: false`,
   * or a version before numbering): then an aggregate's first numbered event reads the newest older
   * event (a Query), so it cannot overtake one still pending or parked. `false` for a table that
   * never had such writers: a first event has no predecessor, no read.
   * @default OUTBOX_UNNUMBERED_EVENTS !== "false" (true)
   */
  readonly unnumberedEvents?: boolean;
  /** The clock, epoch ms (when events were parked or cleared). @default Date.now */
  readonly now?: () => number;
}

/** The outbox relay: a DynamoDB Streams handler that publishes new outbox events. */
export interface OutboxRelay {
  /**
   * The Lambda handler for the stream's batches: publishes, parks and clears, and answers with the
   * first record to retry from (`batchItemFailures`), if any.
   */
  handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse>;
  /** What the last invocation did (tests, benchmarks). */
  readonly lastReport: RelayReport | undefined;
  /** The publisher the relay sends events with (given, or built from `publisherOptions`). */
  readonly publisher: OutboxPublisher;
}

/** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>` → `<name>`. */
export function tableNameFromStreamArn(arn: string | undefined): string | undefined {
  const m = arn?.match(/:table\/([^/]+)\/stream\//);
  return m?.[1];
}

/** Creates the outbox relay (the DynamoDB Streams handler). */
export function createOutboxRelay(options: OutboxRelayOptions = {}): OutboxRelay {
  const client = options.client ?? new DynamoDBClient({});
  const publisher = options.publisher ?? createOutboxPublisher(options.publisherOptions);
  const parkingQueueUrl = options.parkingQueueUrl ?? process.env[OUTBOX_ENV.parkingQueueUrl];
  let sqsClient = options.sqs;
  const sqs = () => {
    sqsClient ??= createSqsClient();
    return sqsClient;
  };
  const now = options.now ?? Date.now;
  const telemetry = options.telemetry;
  const consumer = options.consumerName ?? "outbox-relay";
  let lastReport: RelayReport | undefined;

  const published =
    options.aggregateCache === false
      ? undefined
      : createPublishedSequences(options.aggregateCache ?? AGGREGATE_ORDER_DEFAULTS.cachedAggregates);
  const unnumberedEvents = options.unnumberedEvents ?? process.env[OUTBOX_ENV.unnumberedEvents] !== "false";
  const checks = new Map<string, OrderCheck>();
  const checkFor = (table: string) => {
    let check = checks.get(table);
    if (!check) {
      check = createOrderCheck(client, table, { published, unnumberedEvents });
      checks.set(table, check);
    }
    return check;
  };

  const relay: OutboxRelay = {
    publisher,
    get lastReport() {
      return lastReport;
    },
    async handler(event) {
      assertDynamoDbStreamEvent(event);
      const records = event.Records;
      const tableName =
        options.tableName ??
        process.env[OUTBOX_ENV.tableName] ??
        tableNameFromStreamArn(records[0]?.eventSourceARN);
      if (!tableName) throw new Error("outbox relay: no table name (set APP_TABLE_NAME)");
      const parsed = records.map((r) => parseRelayRecord(r, telemetry));
      const b: RelayBatch = { records, parsed, tableName, failedAt: new Set() };
      const { eventIdx, deferred, orderReads, chains } = await relayOrderCheck(
        b,
        checkFor(tableName),
        telemetry,
      );
      const outcomes = await publisher.publish(eventIdx.map((i) => (b.parsed[i] as EventParsed).event));
      const { toPark, toClear, clearIdx } = sortOutcomes(b, eventIdx, outcomes, consumer, telemetry);
      const t = now();
      const parked = await parkAll(b, toPark, { client, tableName, sqs, parkingQueueUrl, now: t }, telemetry);
      const cleared = await clearPending(client, tableName, toClear, "relay", t);
      const clearedIdx = clearIdx.filter((_, n) => !cleared.failedKeys.has(eventKeyOf(toClear[n]!)));
      rememberPublished(published, chains, new Set(clearedIdx));
      if (cleared.failed > 0) {
        telemetry?.logger.warn(
          "could not clear the pending marker of published events; the sweeper will republish them",
          { count: cleared.failed },
        );
      }
      lastReport = {
        published: toClear.length,
        parked,
        failed: b.failedAt.size,
        skipped: b.parsed.filter((p) => p.kind === "skip").length,
        deferred,
        markFailures: cleared.failed,
        orderReads,
      };
      countReport(lastReport, telemetry);
      return relayAnswer(b);
    },
  };
  return relay;
}
