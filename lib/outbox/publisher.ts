import {
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { PermanentError } from "../core/errors.ts";
import { getKafkaProducer, type KafkaProducer, type OutgoingMessage } from "../kafka/producer.ts";
import { KafkaPublishPermanentError } from "../kafka/publishErrors.ts";
import type { PayloadEncoder } from "../kafka/schemas/encoders.ts";
import {
  CONTEXT_ATTRIBUTE,
  FOLDED_ATTRIBUTE,
  foldAttributes,
  type PlainAttribute,
} from "../sqs/attributePacking.ts";
import { toFifoId } from "../sqs/fifoIds.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import { chunkSqsBatch, SQS_LIMITS, sqsEntryBytes } from "../sqs/sqsLimits.ts";
import { PublishFailedError, PublishRejectedError, UnknownDestinationError } from "./errors.ts";
import { OUTBOX_HEADERS, type OutboxEvent, type PublishOutcome, publishedHeaders } from "./outboxEvent.ts";
import { encodeForKafka, hasSchemaHeader } from "./schemaFraming.ts";

/**
 * Publishes outbox events to their destinations, shared by the stream relay and the sweeper.
 *
 * - **Kafka**: one produce request per call for every topic (the shared producer: acks = all,
 *   idempotent with up to 5 requests in flight, so the broker drops a retried batch it already
 *   wrote and refuses one that would skip a sequence: a retry never duplicates or overtakes a later
 *   record; on a cluster without the idempotent producer, one request in flight). Key = aggregate id, so an
 *   aggregate's events share a partition and keep their order. Headers: `message-id` (the event
 *   id), `event-type`, `aggregate-type`, `aggregate-id`, `traceparent`, `schema-version`, … A
 *   request the cluster rejects for good (MESSAGE_TOO_LARGE, …) is retried record by record to
 *   isolate the poison record, which alone is rejected.
 * - **SQS standard**: SendMessageBatch, up to 10 messages and `sqsMaxBatchBytes` a call, calls in
 *   parallel (a standard queue keeps no order anyway).
 * - **SQS FIFO**: MessageGroupId = aggregate id, MessageDeduplicationId = event id, each as an id SQS
 *   accepts (`toFifoId`: itself when valid, else a readable prefix and a hash). A batch holds at
 *   most one message per group, and a group's next message is sent only after its previous one
 *   succeeded. SQS reports batch entries one by one and does not document what a failed entry
 *   means for later entries of its group; with one message per group per batch, a failure can
 *   never let a later event of the aggregate overtake it. (Many aggregates still fill batches of 10.)
 *
 * Every outcome is per event: `published`, `failed` (transient: retry) or `rejected` (permanent:
 * park). Nothing throws.
 */
export type Target =
  | { readonly kind: "kafka"; readonly topic: string }
  | { readonly kind: "sqs"; readonly queueUrl: string; readonly fifo: boolean };

export type { PublishOutcome } from "./outboxEvent.ts";

/** Options of `createOutboxPublisher`. */
export interface OutboxPublisherOptions {
  /** @default createSqsClient() */
  readonly sqs?: SQSClient;
  /** The producer, or how to get it. @default getKafkaProducer() (KAFKA_BROKERS, MSK_IAM_AUTH, …) */
  readonly kafka?: KafkaProducer | (() => KafkaProducer);
  /** Route name → `kafka:<topic>` | `sqs:<queue url>`. */
  readonly routes?: Readonly<Record<string, string>>;
  /**
   * Total bytes of one SendMessageBatch. SQS's limit for a message and for a whole batch is 1 MiB
   * (raised from 256 KiB in 2025); the batch limit is the API's, whatever a queue's own
   * MaximumMessageSize (a queue with a smaller one rejects the oversized entries one by one).
   * @default SQS_LIMITS.maxBatchBytes (1 048 576)
   */
  readonly sqsMaxBatchBytes?: number;
  /** SendMessageBatch calls in flight at once. @default 10 */
  readonly sqsConcurrency?: number;
  /**
   * Registry-framed Kafka values: schema name → encoder, for events that name a schema in their
   * `x-schema` header (see lib/kafka/schemas/outboxSchemas.ts). @default none
   */
  readonly schemas?: Readonly<Record<string, PayloadEncoder>>;
}

/** Publishes outbox events to their destinations (Kafka topics, SQS queues). */
export interface OutboxPublisher {
  /** Outcomes aligned with `events`. */
  publish(events: ReadonlyArray<OutboxEvent>): Promise<PublishOutcome[]>;
  resolve(destination: string): Target | undefined;
  readonly calls: { sqsSendMessageBatch: number; kafkaSend: number };
}

/** `kafka:<topic>`, `sqs:<queue url>`, or a route name that maps to one of those. */
export function parseDestination(
  destination: string,
  routes: Readonly<Record<string, string>> = {},
): Target | undefined {
  const resolved = routes[destination] ?? destination;
  const colon = resolved.indexOf(":");
  if (colon < 0) return undefined;
  const scheme = resolved.slice(0, colon);
  const rest = resolved.slice(colon + 1).replace(/^\/\//, "");
  if (rest === "") return undefined;
  if (scheme === "kafka") return { kind: "kafka", topic: rest };
  if (scheme === "sqs") return { kind: "sqs", queueUrl: rest, fifo: rest.endsWith(".fifo") };
  return undefined;
}

export { SQS_LIMITS };

const CORE_ATTRIBUTES = new Set<string>(Object.values(OUTBOX_HEADERS));
const VALID_ATTRIBUTE_NAME = /^(?!aws\.|amazon\.)(?!.*\.\.)[A-Za-z0-9_\-.]{1,256}$/i;
/** Our own packing attributes: a user header of that name is folded, never taken for ours. */
const PACKING_ATTRIBUTES = new Set<string>([FOLDED_ATTRIBUTE, CONTEXT_ATTRIBUTE]);

/**
 * Kafka headers → SQS message attributes, never more than 10, never dropping a header. The
 * outbox's own headers (`message-id`, `event-type`, …: 8 of them) are attributes of their own; the
 * user's are too when they fit, else all of them are folded into `x-folded-attributes`
 * (`foldAttributes`), the one folding format every reader of ours unfolds: the SQS consumer's
 * envelope gives them back as headers, as a Kafka consumer sees them. They do not fit when there
 * are more than 2, or one has a name SQS refuses as an attribute name, or an empty value (SQS
 * refuses an empty attribute value).
 */
export function toSqsAttributes(
  headers: Readonly<Record<string, string>>,
): Record<string, MessageAttributeValue> {
  const core: Record<string, MessageAttributeValue> = {};
  const user: Record<string, PlainAttribute> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (CORE_ATTRIBUTES.has(k)) core[k] = { DataType: "String", StringValue: v };
    else user[k] = { DataType: "String", StringValue: v };
  }
  const userNames = Object.keys(user);
  const fits =
    Object.keys(core).length + userNames.length <= SQS_LIMITS.maxAttributes &&
    userNames.every((n) => VALID_ATTRIBUTE_NAME.test(n) && !PACKING_ATTRIBUTES.has(n)) &&
    Object.values(user).every((a) => a.StringValue !== "");
  if (userNames.length === 0) return core;
  return { ...core, ...(fits ? user : foldAttributes(user)) };
}

async function mapLimit<T>(
  items: ReadonlyArray<T>,
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Creates an outbox publisher for the configured destinations. */
export function createOutboxPublisher(options: OutboxPublisherOptions = {}): OutboxPublisher {
  let sqsClient = options.sqs;
  const sqs = () => {
    sqsClient ??= createSqsClient();
    return sqsClient;
  };
  const kafka = (): KafkaProducer => {
    const k = options.kafka;
    if (k === undefined) return getKafkaProducer();
    return typeof k === "function" ? k() : k;
  };
  const routes = options.routes ?? {};
  const maxBatchBytes = options.sqsMaxBatchBytes ?? SQS_LIMITS.maxBatchBytes;
  const concurrency = options.sqsConcurrency ?? 10;
  const calls = { sqsSendMessageBatch: 0, kafkaSend: 0 };

  // Weak: keyed by the event objects of one publish call, so nothing outlives the call.
  const encoded = new WeakMap<OutboxEvent, Buffer | string>();
  const toKafkaMessage = (e: OutboxEvent): OutgoingMessage => ({
    key: e.aggregateId,
    value: encoded.get(e) ?? e.payload,
    headers: publishedHeaders(e),
    timestamp: e.createdAt,
  });

  async function publishKafka(
    byTopic: Map<string, number[]>,
    events: ReadonlyArray<OutboxEvent>,
    outcomes: PublishOutcome[],
  ): Promise<void> {
    if (options.schemas || hasSchemaHeader(events)) {
      // Serialize with the registry's framing first; an event that cannot be encoded is rejected
      // (permanent) or failed (registry unreachable), and later events of its aggregate wait.
      await encodeForKafka(byTopic, events, outcomes, options.schemas, encoded);
    }
    const all = [...byTopic.values()].flat();
    if (all.length === 0) return;
    let producer: KafkaProducer;
    try {
      producer = kafka();
    } catch (error) {
      // Not configured (no KAFKA_BROKERS): the deployment's fault, not the events'. Retry, do not park.
      const e = new PublishFailedError(`no Kafka producer: ${(error as Error).message}`, { cause: error });
      for (const i of all) outcomes[i] = { status: "failed", error: e };
      return;
    }
    try {
      calls.kafkaSend++;
      await producer.sendBatch(
        [...byTopic].map(([topic, idx]) => ({ topic, messages: idx.map((i) => toKafkaMessage(events[i]!)) })),
      );
      for (const i of all) outcomes[i] = { status: "published" };
      return;
    } catch (error) {
      if (!(error instanceof KafkaPublishPermanentError) || all.length === 1) {
        for (const i of all) outcomes[i] = asOutcome(error);
        return;
      }
    }
    // A permanent rejection of a multi-record request: find the poison record(s) one by one, in
    // order, stopping an aggregate at its first failure or rejection so nothing overtakes it.
    const blocked = new Set<string>();
    for (const [topic, idx] of byTopic) {
      for (const i of idx) {
        const e = events[i]!;
        const lane = aggregateOf(e);
        if (blocked.has(lane)) {
          outcomes[i] = behindEarlier();
          continue;
        }
        try {
          calls.kafkaSend++;
          await producer.send(topic, [toKafkaMessage(e)]);
          outcomes[i] = { status: "published" };
        } catch (error) {
          outcomes[i] = asOutcome(error);
          // Failed (retried later) or rejected (parked): either way the aggregate's later events wait.
          blocked.add(lane);
        }
      }
    }
  }

  async function sendSqsBatch(
    queueUrl: string,
    batch: ReadonlyArray<{ index: number; entry: SendMessageBatchRequestEntry }>,
    outcomes: PublishOutcome[],
  ): Promise<void> {
    try {
      calls.sqsSendMessageBatch++;
      const out = await sqs().send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch.map((b) => b.entry) }),
      );
      const failed = new Map((out.Failed ?? []).map((f) => [f.Id, f]));
      for (const b of batch) {
        const f = failed.get(b.entry.Id);
        if (!f) {
          outcomes[b.index] = { status: "published" };
        } else if (f.SenderFault) {
          outcomes[b.index] = {
            status: "rejected",
            error: new PublishRejectedError(
              `SQS rejected the message (${f.Code}): ${f.Message ?? ""}`.slice(0, 500),
            ),
          };
        } else {
          outcomes[b.index] = {
            status: "failed",
            error: new PublishFailedError(
              `SQS failed the message (${f.Code}): ${f.Message ?? ""}`.slice(0, 500),
            ),
          };
        }
      }
    } catch (error) {
      // The SDK already retried; the whole call failed (network, throttling, queue missing).
      const e = new PublishFailedError(
        `SendMessageBatch to ${queueUrl} failed: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
      for (const b of batch) outcomes[b.index] = { status: "failed", error: e };
    }
  }

  function toEntry(e: OutboxEvent, n: number, fifo: boolean): SendMessageBatchRequestEntry {
    return {
      Id: `m${n}`,
      MessageBody: e.payload,
      MessageAttributes: toSqsAttributes(publishedHeaders(e)),
      ...(fifo
        ? { MessageGroupId: toFifoId(e.aggregateId), MessageDeduplicationId: toFifoId(e.eventId) }
        : {}),
    };
  }

  const chunk = <T extends { entry: SendMessageBatchRequestEntry }>(items: ReadonlyArray<T>) =>
    chunkSqsBatch(items, (item) => sqsEntryBytes(item.entry), maxBatchBytes);

  async function publishSqs(
    target: Extract<Target, { kind: "sqs" }>,
    idx: ReadonlyArray<number>,
    events: ReadonlyArray<OutboxEvent>,
    outcomes: PublishOutcome[],
  ): Promise<void> {
    if (!target.fifo) {
      const items = idx.map((index, n) => ({ index, entry: toEntry(events[index]!, n, false) }));
      await mapLimit(chunk(items), concurrency, (batch) => sendSqsBatch(target.queueUrl, batch, outcomes));
      return;
    }
    // FIFO: rounds; each round takes the next event of every unblocked group.
    const groups = new Map<string, number[]>();
    for (const index of idx) {
      const g = toFifoId(events[index]!.aggregateId);
      let q = groups.get(g);
      if (!q) {
        q = [];
        groups.set(g, q);
      }
      q.push(index);
    }
    let n = 0;
    while (groups.size > 0) {
      const round = [...groups.values()].map((q) => {
        const index = q[0]!;
        return { index, entry: toEntry(events[index]!, n++, true) };
      });
      await mapLimit(chunk(round), concurrency, (batch) => sendSqsBatch(target.queueUrl, batch, outcomes));
      for (const [g, q] of groups) {
        const head = q.shift()!;
        // A failure or a rejection blocks the rest of the group: a failed event is retried later,
        // a rejected one is parked by the caller, and no later event of the aggregate overtakes it.
        if (outcomes[head]?.status !== "published") {
          for (const rest of q) outcomes[rest] = behindEarlier();
          q.length = 0;
        }
        if (q.length === 0) groups.delete(g);
      }
    }
  }

  return {
    calls,
    resolve: (destination) => parseDestination(destination, routes),
    async publish(events) {
      const outcomes: PublishOutcome[] = new Array(events.length);
      const kafkaTopics = new Map<string, number[]>();
      const queues = new Map<string, { target: Extract<Target, { kind: "sqs" }>; idx: number[] }>();
      const rejectedAggregates = new Set<string>();
      events.forEach((e, i) => {
        const target = parseDestination(e.destination, routes);
        if (rejectedAggregates.has(aggregateOf(e))) {
          // An earlier event of this aggregate is parked: this one must not overtake it.
          outcomes[i] = behindEarlier();
        } else if (!target) {
          rejectedAggregates.add(aggregateOf(e));
          outcomes[i] = {
            status: "rejected",
            error: new UnknownDestinationError(
              `event ${e.eventId}: destination '${e.destination}' is neither kafka:<topic>, sqs:<queue url> nor a configured route`,
            ),
          };
        } else if (target.kind === "kafka") {
          const list = kafkaTopics.get(target.topic) ?? [];
          list.push(i);
          kafkaTopics.set(target.topic, list);
        } else {
          const q = queues.get(target.queueUrl) ?? { target, idx: [] };
          q.idx.push(i);
          queues.set(target.queueUrl, q);
        }
      });
      await Promise.all([
        kafkaTopics.size > 0 ? publishKafka(kafkaTopics, events, outcomes) : undefined,
        ...[...queues.values()].map((q) => publishSqs(q.target, q.idx, events, outcomes)),
      ]);
      return outcomes;
    },
  };
}

/** One aggregate across destinations: its events share the partition key of the app table. */
function aggregateOf(e: OutboxEvent): string {
  return `${e.aggregateType}#${e.aggregateId}`;
}

/** The outcome of an event held back behind an earlier event of its aggregate that failed or was rejected. */
function behindEarlier(): PublishOutcome {
  return {
    status: "failed",
    error: new PublishFailedError("an earlier event of this aggregate failed or was rejected"),
  };
}

function asOutcome(error: unknown): PublishOutcome {
  if (error instanceof PermanentError) return { status: "rejected", error };
  return { status: "failed", error: error instanceof Error ? error : new PublishFailedError(String(error)) };
}

/**
 * Sends one parked record to a parking queue (a plain SendMessage; it is rare). On a FIFO queue its
 * group (the item's key: one group per aggregate) and dedup id go through `toFifoId`, as the
 * publisher's do: a key SQS refuses would fail the park and block the relay's shard.
 */
export async function sendToParkingQueue(
  sqs: SQSClient,
  queueUrl: string,
  body: string,
  attributes: Record<string, MessageAttributeValue>,
  fifoGroup?: string,
  dedupId?: string,
): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: body,
      MessageAttributes: attributes,
      ...(queueUrl.endsWith(".fifo")
        ? {
            MessageGroupId: toFifoId(fifoGroup ?? "parked"),
            ...(dedupId !== undefined ? { MessageDeduplicationId: toFifoId(dedupId) } : {}),
          }
        : {}),
    }),
  );
}
