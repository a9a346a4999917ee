import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeleteQueueCommand } from "@aws-sdk/client-sqs";
import { logLevel } from "kafkajs";
import { createKafkaProducer, disconnectAllKafkaProducers, getKafkaProducer } from "reliable-consumers/kafka";
import { createInboxOutbox, createOutboxPublisher, createOutboxRelay } from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { createAppTable, deleteTable } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TopicTap, tapTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";
import {
  byPrefix,
  createQueue,
  envelopeOf,
  firstOccurrences,
  receiveAll,
  scanAll,
  streamTrigger,
} from "../support/outboxHarness.ts";

const name = names(import.meta.url);
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const table = name("app");
const topic = name("order-events");
let streamArn: string;
let queueUrl: string;
let tap: TopicTap;
const broken: Array<{ disconnect(): Promise<void> }> = [];

beforeAll(async () => {
  streamArn = await createAppTable(ddb, table);
  queueUrl = await createQueue(sqs, name("audit"));
  tap = await tapTopics([topic], name("tap"));
});
afterAll(async () => {
  await tap?.stop();
  await Promise.all(broken.map((p) => p.disconnect().catch(() => {})));
  await disconnectAllKafkaProducers();
  await deleteTable(ddb, table);
  await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => {});
});

interface Payload {
  agg: string;
  v: number;
}

describe("relay to Kafka (librdkafka mock) and SQS", () => {
  it("no event is lost and each aggregate's order holds when the broker connection breaks mid-run; duplicates keep their event id", async () => {
    const uow = createInboxOutbox({ tableName: table, scope: "k", client: ddb });
    const aggregates = ["a1", "a2", "a3", "a4"];
    const kafkaIds = new Set<string>();
    const sqsIds = new Set<string>();
    for (let v = 1; v <= 10; v++) {
      for (const agg of aggregates) {
        const r = await uow.run(envelopeOf(`${agg}-${v}`, {}), (tx) => {
          kafkaIds.add(
            tx.publish({
              aggregateType: "order",
              aggregateId: agg,
              eventType: "Changed",
              payload: { agg, v },
              destination: `kafka:${topic}`,
            }),
          );
          sqsIds.add(
            tx.publish({
              aggregateType: "audit",
              aggregateId: agg,
              eventType: "Audited",
              payload: { agg, v },
              destination: `sqs:${queueUrl}`,
            }),
          );
        });
        expect(r.status).toBe("committed");
      }
    }

    // The 2nd invocation's producer points at a closed port: the connection is gone mid-run.
    let invocation = 0;
    const relay = createOutboxRelay({
      tableName: table,
      publisher: createOutboxPublisher({
        kafka: () => {
          invocation++;
          if (invocation !== 2) return getKafkaProducer();
          const dead = createKafkaProducer(
            {
              brokers: ["127.0.0.1:1"],
              connectionTimeoutMs: 200,
              retry: { retries: 0, initialRetryTime: 50 },
            },
            { logLevel: logLevel.NOTHING },
          );
          broken.push(dead);
          return dead;
        },
      }),
    });
    const stats = await streamTrigger(streamArn, relay.handler, { batchSize: 20 }).drain();
    expect(stats.retries).toBeGreaterThanOrEqual(1);
    expect(stats.discarded).toBe(0);

    const records = await tap.take(topic, kafkaIds.size);
    const consumed = records.map((r) => ({
      id: r.message.headers?.["message-id"]?.toString() ?? "",
      key: r.message.key?.toString() ?? "",
      body: JSON.parse(r.message.value!.toString()) as Payload,
      traceparent: r.message.headers?.traceparent?.toString(),
    }));
    expect(new Set(consumed.map((c) => c.id))).toEqual(kafkaIds);
    expect(consumed.every((c) => c.key === c.body.agg && c.traceparent?.startsWith("00-"))).toBe(true);
    const perKey = firstOccurrences(
      consumed,
      (c) => c.id,
      (c) => c.key,
    );
    for (const agg of aggregates)
      expect(perKey.get(agg)?.map((c) => c.body.v)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

    // The batch that failed on Kafka had already sent its SQS events: they come again, same ids.
    const audit = await receiveAll(sqs, queueUrl);
    const auditIds = audit.map((m) => m.MessageAttributes?.["message-id"]?.StringValue ?? "");
    expect(new Set(auditIds)).toEqual(sqsIds);
    expect(auditIds.length).toBeGreaterThan(sqsIds.size);

    // Every event ends up cleared from the pending index.
    const outbox = byPrefix(await scanAll(ddb, table), "OUTBOX#");
    expect(outbox).toHaveLength(kafkaIds.size + sqsIds.size);
    expect(outbox.filter((i) => i.pending !== undefined)).toHaveLength(0);
  });
});
