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
import type { SQSClient } from "@aws-sdk/client-sqs";
import { getKafkaProducer, type KafkaProducer } from "../kafka/producer.ts";
import type { PayloadEncoder } from "../kafka/schemas/encoders.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import { SQS_LIMITS } from "../sqs/sqsLimits.ts";
import type { OutboxEvent, PublishOutcome } from "./outboxEvent.ts";
import { publishKafka } from "./publishKafka.ts";
import { groupByDestination, parseDestination, type Target } from "./publishRoutes.ts";
import { publishSqs } from "./publishSqs.ts";

export type { PublishOutcome } from "./outboxEvent.ts";
export { parseDestination, type Target } from "./publishRoutes.ts";
export { toSqsAttributes } from "./publishSqs.ts";
export { SQS_LIMITS };

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

/**
 * Creates an outbox publisher for the configured destinations. The stages are modules of their
 * own: publishRoutes.ts (grouping by destination), publishKafka.ts, publishSqs.ts, and
 * publishOutcomes.ts (the rule that holds an aggregate's later events behind a failed one).
 */
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
  const calls = { sqsSendMessageBatch: 0, kafkaSend: 0 };
  // Weak: keyed by the event objects of one publish call, so nothing outlives the call.
  const encoded = new WeakMap<OutboxEvent, Buffer | string>();
  const kafkaDeps = { kafka, schemas: options.schemas, encoded, calls };
  const sqsDeps = {
    sqs,
    maxBatchBytes: options.sqsMaxBatchBytes ?? SQS_LIMITS.maxBatchBytes,
    concurrency: options.sqsConcurrency ?? 10,
    calls,
  };

  return {
    calls,
    resolve: (destination) => parseDestination(destination, routes),
    async publish(events) {
      const outcomes: PublishOutcome[] = new Array(events.length);
      const { kafkaTopics, queues } = groupByDestination(events, routes, outcomes);
      await Promise.all([
        kafkaTopics.size > 0 ? publishKafka(kafkaDeps, kafkaTopics, events, outcomes) : undefined,
        ...[...queues.values()].map((q) => publishSqs(sqsDeps, q.target, q.idx, events, outcomes)),
      ]);
      return outcomes;
    },
  };
}
