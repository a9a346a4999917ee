import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { describeError } from "../core/errors.ts";
import { OUTBOX_ENV } from "../env.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import {
  AGGREGATE_ORDER_DEFAULTS,
  type AggregateChain,
  createOrderCheck,
  createPublishedSequences,
  type OrderCheck,
  type OrderedEvent,
} from "./aggregateOrder.ts";
import { NotAnOutboxItemError, StreamViewTypeError } from "./errors.ts";
import { isOutboxKey, type OutboxEvent, parseOutboxItem, positionOf } from "./outboxEvent.ts";
import {
  createOutboxPublisher,
  type OutboxPublisher,
  type OutboxPublisherOptions,
  type PublishOutcome,
} from "./publisher.ts";
import { OUTBOX_ATTR as A } from "./schema.ts";
import { clearPending, eventKeyOf, fromLambdaImage, park } from "./settle.ts";
import { assertDynamoDbStreamEvent } from "./streamEvent.ts";

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
  /** @default a new DynamoDBClient */
  readonly client?: DynamoDBClient;
  /** @default a publisher built from `publisherOptions` */
  readonly publisher?: OutboxPublisher;
  readonly publisherOptions?: OutboxPublisherOptions;
  /** Where events that can never be published go, with their context. @default OUTBOX_PARKING_QUEUE_URL */
  readonly parkingQueueUrl?: string;
  /** @default createSqsClient() */
  readonly sqs?: SQSClient;
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
  readonly now?: () => number;
}

/** What one relay invocation published, parked and left for a retry. */
export interface RelayReport {
  readonly published: number;
  readonly parked: number;
  readonly failed: number;
  readonly skipped: number;
  /** Left pending, acked: an older event of their aggregate is still waiting (the sweeper publishes them). */
  readonly deferred: number;
  readonly markFailures: number;
  /** Predecessors read from the table (where the order was in doubt); the other events needed none. */
  readonly orderReads: number;
}

/** The outbox relay: a DynamoDB Streams handler that publishes new outbox events. */
export interface OutboxRelay {
  handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse>;
  /** What the last invocation did (tests, benchmarks). */
  readonly lastReport: RelayReport | undefined;
  readonly publisher: OutboxPublisher;
}

/** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>` → `<name>`. */
export function tableNameFromStreamArn(arn: string | undefined): string | undefined {
  const m = arn?.match(/:table\/([^/]+)\/stream\//);
  return m?.[1];
}

type Parsed =
  | { kind: "event"; event: OutboxEvent; image: Record<string, AttributeValue> }
  | {
      kind: "park";
      error: unknown;
      image: unknown;
      key: { pk: string; sk: string } | undefined;
      /** Its place in its aggregate, when readable: later events wait behind it. */
      seq: number | undefined;
    }
  | { kind: "skip"; reason: "not-insert" | "not-outbox" | "not-pending" };

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

  const parse = (record: DynamoDBRecord): Parsed => {
    if (record.eventName !== "INSERT") return { kind: "skip", reason: "not-insert" };
    const lambdaImage = record.dynamodb?.NewImage;
    if (!lambdaImage) {
      const keys = record.dynamodb?.Keys;
      if (keys && isOutboxKey(fromLambdaImage(keys))) {
        throw new StreamViewTypeError(
          "the stream carries no new images: set StreamViewType to NEW_IMAGE or NEW_AND_OLD_IMAGES",
        );
      }
      return { kind: "skip", reason: "not-outbox" };
    }
    const image = fromLambdaImage(lambdaImage);
    if (!isOutboxKey(image)) {
      const error = new NotAnOutboxItemError(
        "an INSERT of a non-outbox item reached the relay; check the event-source filter (OUTBOX_STREAM_FILTER_PATTERN)",
      );
      // Logged under the error's name (docs/outbox.md), so a search for it finds the missing filter.
      telemetry?.logger.error(`${error.name}: ${error.message}`, {
        error: describeError(error),
        sequenceNumber: record.dynamodb?.SequenceNumber,
      });
      return { kind: "skip", reason: "not-outbox" };
    }
    if (image[A.pending] === undefined) return { kind: "skip", reason: "not-pending" };
    const pk = image[A.pk]?.S;
    const sk = image[A.sk]?.S;
    const key = pk !== undefined && sk !== undefined ? { pk, sk } : undefined;
    try {
      return { kind: "event", event: parseOutboxItem(image), image };
    } catch (error) {
      return { kind: "park", error, image: lambdaImage, key, seq: positionOf(image)?.seq };
    }
  };

  type EventParsed = Extract<Parsed, { kind: "event" }>;
  type ParkInput = { index: number; input: Parameters<typeof park>[0] };
  /** One invocation's records, what each parsed to, and which failed (they are retried from the first). */
  interface RelayBatch {
    readonly records: ReadonlyArray<DynamoDBRecord>;
    readonly parsed: ReadonlyArray<Parsed>;
    readonly tableName: string;
    readonly failedAt: Set<number>;
  }

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

  /** The events of the batch, and where each unparseable (to be parked) event of an aggregate stands. */
  const orderInputs = (b: RelayBatch) => {
    const events: OrderedEvent<number>[] = [];
    const parks = new Map<string, Array<{ index: number; seq: number | undefined }>>();
    b.parsed.forEach((p, index) => {
      if (p.kind === "park" && p.key) {
        parks.set(p.key.pk, [...(parks.get(p.key.pk) ?? []), { index, seq: p.seq }]);
      }
      if (p.kind !== "event") return;
      const pk = p.image[A.pk]!.S!;
      events.push({ ref: index, pk, sk: p.image[A.sk]!.S!, position: positionOf(p.image) });
    });
    // Behind an event parked in this batch: after it in its aggregate's order (else in batch order).
    const behindPark = (e: OrderedEvent<number>) =>
      (parks.get(e.pk) ?? []).some((k) =>
        k.seq !== undefined && e.position ? e.position.seq > k.seq : e.ref > k.index,
      );
    return { events, behindPark };
  };

  /**
   * Order per aggregate (aggregateOrder.ts): each aggregate's events in their own order; an event
   * whose predecessor is still pending or parked is not published here, nor are the later events of
   * its aggregate. They stay pending and their records are acked, so the shard moves on; the
   * sweeper publishes them once everything older is out. A failed read fails them (retried).
   */
  const orderCheck = async (b: RelayBatch) => {
    const { events, behindPark } = orderInputs(b);
    const chains = await checkFor(b.tableName).chains(events);
    let deferred = 0;
    let orderReads = 0;
    const eventIdx: number[] = [];
    for (const chain of chains) {
      let stop: "deferred" | "failed" | undefined;
      chain.events.forEach((e, k) => {
        const gate = chain.gates[k]!;
        if (gate.kind === "clear" && gate.read) orderReads++;
        if (gate.kind === "waiting" || gate.kind === "unknown") orderReads++;
        const eventId = (b.parsed[e.ref] as EventParsed).event.eventId;
        if (!stop && gate.kind === "unknown") {
          stop = "failed";
          telemetry?.logger.warn("outbox order check failed; will retry", {
            eventId,
            error: describeError(gate.error),
          });
        } else if (!stop && (gate.kind === "waiting" || behindPark(e))) {
          stop = "deferred";
          telemetry?.logger.info("outbox event held: an older event of its aggregate is waiting", {
            eventId,
            blockedBy: gate.kind === "waiting" ? gate.blockingSk : "parked in this batch",
          });
        }
        if (stop === "failed") b.failedAt.add(e.ref);
        else if (stop === "deferred") deferred++;
        else eventIdx.push(e.ref);
      });
    }
    return { eventIdx, deferred, orderReads, chains };
  };

  /** After the clear: each aggregate's published prefix moves its cached sequence number on. */
  const remember = (chains: ReadonlyArray<AggregateChain<number>>, clearedIdx: ReadonlySet<number>): void => {
    if (!published) return;
    for (const chain of chains) {
      let last: number | undefined;
      for (const e of chain.events) {
        if (!clearedIdx.has(e.ref) || !e.position) break;
        last = e.position.seq;
      }
      if (last !== undefined) published.advance(chain.pk, last);
    }
  };

  /** What to park (what can never be published) and what to clear, from the parse and the publish outcomes. */
  const sortOutcomes = (b: RelayBatch, eventIdx: ReadonlyArray<number>, outcomes: PublishOutcome[]) => {
    const source = (i: number) => b.records[i]?.eventSourceARN ?? "stream";
    const toPark: ParkInput[] = [];
    b.parsed.forEach((p, i) => {
      if (p.kind === "park") {
        const input = { key: p.key, image: p.image, eventId: undefined, error: p.error, source: source(i) };
        toPark.push({ index: i, input: { ...input, consumer } });
      }
    });
    const toClear: Record<string, AttributeValue>[] = [];
    const clearIdx: number[] = [];
    outcomes.forEach((o, n) => {
      const index = eventIdx[n]!;
      const p = b.parsed[index] as EventParsed;
      if (o.status === "published") {
        toClear.push(p.image);
        clearIdx.push(index);
      } else if (o.status === "failed") {
        b.failedAt.add(index);
        telemetry?.logger.warn("outbox publish failed; will retry", {
          eventId: p.event.eventId,
          destination: p.event.destination,
          error: describeError(o.error),
        });
      } else {
        toPark.push({
          index,
          input: {
            key: { pk: p.image[A.pk]!.S!, sk: p.image[A.sk]!.S! },
            image: b.records[index]?.dynamodb?.NewImage,
            eventId: p.event.eventId,
            error: o.error,
            source: source(index),
            consumer,
          },
        });
      }
    });
    return { toPark, toClear, clearIdx };
  };

  /** Parks each event; a failed parking fails its record (nothing is acked). Returns how many were parked. */
  const parkAll = async (b: RelayBatch, toPark: ReadonlyArray<ParkInput>, t: number): Promise<number> => {
    let parked = 0;
    await Promise.all(
      toPark.map(async ({ index, input }) => {
        try {
          await park(input, { client, tableName: b.tableName, sqs, parkingQueueUrl, now: t });
          parked++;
          telemetry?.logger.error("outbox event parked", {
            eventId: input.eventId,
            sequenceNumber: b.records[index]?.dynamodb?.SequenceNumber,
            error: describeError(input.error),
          });
        } catch (error) {
          b.failedAt.add(index);
          telemetry?.logger.error("parking an outbox event failed; will retry", {
            eventId: input.eventId,
            error: describeError(error),
          });
        }
      }),
    );
    return parked;
  };

  const record = (report: RelayReport) => {
    lastReport = report;
    if (!telemetry) return;
    if (report.published) telemetry.count(METRIC.published, report.published);
    if (report.parked) telemetry.count(METRIC.outboxParked, report.parked);
    if (report.failed) telemetry.count(METRIC.outboxPublishFailures, report.failed);
    if (report.skipped) telemetry.count(METRIC.outboxRelaySkipped, report.skipped);
    if (report.deferred) telemetry.count(METRIC.outboxDeferred, report.deferred);
    if (report.markFailures) telemetry.count(METRIC.outboxMarkFailures, report.markFailures);
  };

  /** The partial response: the stream is retried from the first failed record. */
  const answer = (b: RelayBatch): DynamoDBBatchResponse => {
    if (b.failedAt.size === 0) return { batchItemFailures: [] };
    const sequenceNumber = b.records[Math.min(...b.failedAt)]?.dynamodb?.SequenceNumber;
    // No sequence number cannot be checkpointed: fail the whole batch instead.
    if (!sequenceNumber) throw new Error("outbox relay: a failed record has no SequenceNumber");
    return { batchItemFailures: [{ itemIdentifier: sequenceNumber }] };
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
      const b: RelayBatch = { records, parsed: records.map(parse), tableName, failedAt: new Set() };
      const { eventIdx, deferred, orderReads, chains } = await orderCheck(b);
      const outcomes = await publisher.publish(eventIdx.map((i) => (b.parsed[i] as EventParsed).event));
      const { toPark, toClear, clearIdx } = sortOutcomes(b, eventIdx, outcomes);
      const t = now();
      const parked = await parkAll(b, toPark, t);
      const cleared = await clearPending(client, tableName, toClear, "relay", t);
      remember(chains, new Set(clearIdx.filter((_, n) => !cleared.failedKeys.has(eventKeyOf(toClear[n]!)))));
      if (cleared.failed > 0) {
        telemetry?.logger.warn(
          "could not clear the pending marker of published events; the sweeper will republish them",
          { count: cleared.failed },
        );
      }
      record({
        published: toClear.length,
        parked,
        failed: b.failedAt.size,
        skipped: b.parsed.filter((p) => p.kind === "skip").length,
        deferred,
        markFailures: cleared.failed,
        orderReads,
      });
      return answer(b);
    },
  };
  return relay;
}
