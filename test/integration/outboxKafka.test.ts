import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeleteQueueCommand } from "@aws-sdk/client-sqs";
import { logLevel } from "kafkajs";
import { disconnectAllKafkaProducers, getKafkaProducer } from "reliable-consumers/kafka";
import { createInboxOutbox, createOutboxRelay } from "reliable-consumers/outbox";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKafkaProducer } from "../../lib/kafka/producer.ts";
import { createOutboxPublisher } from "../../lib/outbox/publisher.ts";
import { createAppTable } from "../../local/src/services/dynamodb/appTable.ts";
import { deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
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
import { arnOf } from "../support/queues.ts";

const name = names(import.meta.url);
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const table = name("app");
const topic = name("order-events");
const headersTopic = name("header-events");
let streamArn: string;
let queueUrl: string;
let tap: TopicTap;
const broken: Array<{ disconnect(): Promise<void> }> = [];

beforeAll(async () => {
  streamArn = await createAppTable(ddb, table);
  queueUrl = await createQueue(sqs, name("audit"));
  tap = await tapTopics([topic, headersTopic], name("tap"));
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

describe("issue 34 item 5: user headers past SQS's attributes reach the SQS consumer as they reach Kafka", () => {
  it("three headers, and an empty one: our sqsConsumer sees every one; a Kafka consumer sees the same", async () => {
    const appTable = name("headers");
    const headersStream = await createAppTable(ddb, appTable);
    const queue = await createQueue(sqs, name("headers"));
    const uow = createInboxOutbox({ tableName: appTable, scope: "h", client: ddb });
    // Three user headers: 8 of the outbox's own plus 3 would be 11 attributes. An empty value:
    // SQS refuses one as an attribute.
    const many = { tenant: "acme", region: "eu-west-1", plan: "gold" };
    const empty = { tenant: "globex", note: "" };
    await uow.run(envelopeOf("h1", {}), (tx) => {
      for (const [agg, headers] of [
        ["many", many],
        ["empty", empty],
      ] as const)
        for (const destination of [`kafka:${headersTopic}`, `sqs:${queue}`])
          tx.publish({
            aggregateType: "h",
            aggregateId: agg,
            eventType: "E",
            payload: { agg },
            destination,
            headers,
          });
    });
    try {
      const relay = createOutboxRelay({ tableName: appTable });
      expect((await streamTrigger(headersStream, relay.handler).drain()).discarded).toBe(0);

      const seen = new Map<string, Readonly<Record<string, string>>>();
      const handler = sqsConsumer<{ agg: string }>(
        ({ body, headers }) => {
          seen.set(body.agg, headers);
        },
        { idempotency: false },
      );
      const out = await invokeFromQueue(sqs, handler, {
        queueUrl: queue,
        queueArn: await arnOf(sqs, queue),
        functionName: "headers",
        waitSeconds: 5,
      });
      expect(out).toMatchObject({ received: 2, failed: [] });
      expect(seen.get("many")).toMatchObject({ ...many, "event-type": "E", "aggregate-id": "many" });
      expect(seen.get("empty")).toMatchObject(empty);
      expect(Object.keys(seen.get("many") ?? {}).filter((h) => h.startsWith("x-"))).toEqual([]);

      // A Kafka consumer sees the same headers, as before.
      const records = await tap.take(headersTopic, 2);
      const kafkaHeaders = (agg: string) => {
        const r = records.find((k) => k.message.key?.toString() === agg);
        return Object.fromEntries(
          Object.entries(r?.message.headers ?? {}).map(([k, v]) => [k, v?.toString()]),
        );
      };
      expect(kafkaHeaders("many")).toMatchObject(many);
      expect(kafkaHeaders("empty")).toMatchObject(empty);
    } finally {
      await deleteTable(ddb, appTable);
      await sqs.send(new DeleteQueueCommand({ QueueUrl: queue })).catch(() => {});
    }
  });
});
