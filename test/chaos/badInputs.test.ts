import { randomBytes } from "node:crypto";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, DeleteQueueCommand, type Message } from "@aws-sdk/client-sqs";
import type { DynamoDBRecord, SQSEvent, SQSRecord } from "aws-lambda";
import { Kafka, logLevel } from "kafkajs";
import { disconnectAllKafkaProducers } from "reliable-consumers/kafka";
import { createInboxOutbox } from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kafkaCases, sqsCases, wrongShapes } from "../../chaos/badInputCorpus.ts";
import { readQueue, readTopic, scanTable } from "../../chaos/storedState.ts";
import { createAppTable } from "../../local/src/services/dynamodb/appTable.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { toLambdaImage } from "../../local/src/services/dynamodb/streamRecord.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { declareTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

/**
 * The bad-input corpus through each consumer of the reference service, the real handlers
 * (functions/*): each bad message gets its typed error and lands in a dead-letter destination with
 * its context, the good messages of the same batch are processed, and no batch fails as a whole.
 * Outcomes are read from the queues, topics and tables, not from the handlers' return values alone.
 */
const name = names(import.meta.url);
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const run = randomBytes(3).toString("hex");
const appTable = name("app");
const dedupTable = name("dedup");
const topic = name("order-events");
const queues: string[] = [];
type Handler = (event: unknown, context: unknown) => Promise<unknown>;
let orderConsumer: Handler;
let paymentConsumer: Handler;
let relay: Handler;
let dlqUrl: string;
let parkingUrl: string;
let eventsUrl: string;
let ordersArn: string;

async function queue(what: string, attributes: Record<string, string> = {}) {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name(what), Attributes: attributes })))
    .QueueUrl!;
  queues.push(url);
  return url;
}

beforeAll(async () => {
  await createAppTable(ddb, appTable);
  await createDedupTable(ddb, dedupTable);
  // SQS takes up to 1 MiB, and so does the consumer: a 300 KiB order is processed, and parked copies fit.
  dlqUrl = await queue("orders-dlq", { MaximumMessageSize: "1048576" });
  parkingUrl = await queue("parking", { MaximumMessageSize: "1048576" });
  eventsUrl = await queue("events");
  const ordersUrl = await queue("orders");
  ordersArn = `arn:aws:sqs:us-east-1:000000000000:${ordersUrl.split("/").pop()}`;
  Object.assign(process.env, {
    APP_TABLE_NAME: appTable,
    DLQ_URL: dlqUrl,
    KAFKA_TOPIC: topic,
    DEDUP_TABLE_NAME: dedupTable,
    OUTBOX_PARKING_QUEUE_URL: parkingUrl,
    KAFKA_RETRY_LADDER: JSON.stringify({
      topic,
      retries: [{ topic: `${topic}.retry.1s`, delayMs: 1000 }],
      deadLetterTopic: `${topic}.DLQ`,
    }),
  });
  // What the stack would declare: the main topic, its retry rung and its DLQ (nothing is auto-created).
  await declareTopics([topic, `${topic}.retry.1s`, `${topic}.DLQ`]);
  delete process.env.PAYMENT_GATEWAY_URL;
  orderConsumer = (await import("../../functions/order-consumer/handler.ts")).handler as Handler;
  paymentConsumer = (await import("../../functions/payment-consumer/handler.ts")).handler as Handler;
  relay = (await import("../../lib/handlers/outboxRelay.ts")).handler as Handler;
});

afterAll(async () => {
  await disconnectAllKafkaProducers();
  await Promise.all([deleteTable(ddb, appTable), deleteTable(ddb, dedupTable)]);
  await Promise.all(queues.map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl })).catch(() => {})));
});

function sqsRecord(i: number, body: string, attributes: SqsCaseAttributes = {}): SQSRecord {
  return {
    messageId: `bad-${run}-${i}`,
    receiptHandle: `rh-${run}-${i}`,
    body,
    attributes: {
      ApproximateReceiveCount: "1",
      SentTimestamp: String(Date.now()),
      SenderId: "chaos",
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(attributes).map(([k, a]) => [
        k,
        {
          dataType: a.DataType ?? "String",
          ...(a.StringValue !== undefined ? { stringValue: a.StringValue } : {}),
          ...(a.BinaryValue !== undefined
            ? { binaryValue: Buffer.from(a.BinaryValue).toString("base64") }
            : {}),
          stringListValues: [],
          binaryListValues: [],
        },
      ]),
    ),
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: ordersArn,
    awsRegion: "us-east-1",
  };
}
type SqsCaseAttributes = NonNullable<(typeof sqsCases)[number]["attributes"]>;

function failureContext(m: Message): Record<string, string> | undefined {
  const direct = m.MessageAttributes?.["x-failure-context"]?.StringValue;
  if (direct) return JSON.parse(direct) as Record<string, string>;
  const folded = m.MessageAttributes?.["x-folded-attributes"]?.StringValue;
  return folded ? (JSON.parse(folded) as { context: Record<string, string> }).context : undefined;
}

describe("bad inputs through the SQS consumer (functions/order-consumer)", () => {
  it("each bad message is parked in the DLQ with its typed error and context; good ones in the batch are processed", async () => {
    const records = sqsCases.map((c, i) =>
      sqsRecord(i, c.body.replaceAll("<id>", `o-${run}-${i}`), c.attributes),
    );
    const event: SQSEvent = { Records: records };
    const response = (await orderConsumer(event, lambdaContext("order-consumer", 30_000))) as {
      batchItemFailures: unknown[];
    };
    expect(response.batchItemFailures).toEqual([]);
    const parked = await readQueue(sqs, dlqUrl);
    const byMessageId = new Map(parked.map((m) => [failureContext(m)?.["x-message-id"], m]));
    const outcome: Record<string, string> = {};
    for (const [i, c] of sqsCases.entries()) {
      const m = byMessageId.get(`bad-${run}-${i}`);
      if ("dlq" in c.expect) {
        const ctx = m ? failureContext(m) : undefined;
        outcome[c.name] = ctx?.["x-last-error"]?.split(":")[0] ?? "not parked";
        if (ctx) {
          expect(ctx["x-consumer"], c.name).toBeTruthy();
          expect(ctx["x-original-queue"], c.name).toContain("orders");
          expect(ctx["x-first-failed-at"], c.name).toMatch(/^\d{4}-/);
          expect(m!.Body, c.name).toBe(records[i]!.body);
        }
      } else {
        const item = await ddb.send(
          new GetItemCommand({
            TableName: appTable,
            Key: { pk: { S: `ORDER#o-${run}-${i}` }, sk: { S: "ORDER" } },
          }),
        );
        outcome[c.name] = item.Item ? "processed" : m ? "parked" : "lost";
      }
    }
    expect(outcome).toEqual(
      Object.fromEntries(sqsCases.map((c) => [c.name, "dlq" in c.expect ? c.expect.dlq : "processed"])),
    );
    // The user's own attributes travel with the parked message (folded when there are too many).
    const tenAttrs = byMessageId.get(
      `bad-${run}-${sqsCases.findIndex((c) => c.name.startsWith("ten attributes"))}`,
    )!;
    const folded = JSON.parse(tenAttrs.MessageAttributes?.["x-folded-attributes"]?.StringValue ?? "{}") as {
      attributes?: Record<string, unknown>;
    };
    expect(Object.keys(folded.attributes ?? {})).toEqual(expect.arrayContaining(["bin", "a0", "a8"]));
  });

  it.each(wrongShapes)(
    "refuses a wrong event shape as a whole with a typed error: $name",
    async ({ event }) => {
      await expect(orderConsumer(event, lambdaContext("order-consumer", 30_000))).rejects.toMatchObject({
        name: "UnknownEventShapeError",
      });
    },
  );
});

describe("bad inputs through the Kafka consumer (functions/payment-consumer)", () => {
  it("each bad record reaches the DLQ topic with its typed error and context; the batch is not failed", async () => {
    const t = topic;
    const base = { topic: t, partition: 0, timestamp: Date.now(), timestampType: "CREATE_TIME" };
    const event = {
      eventSource: "aws:kafka",
      eventSourceArn: "arn:aws:kafka:us-east-1:000000000000:cluster/local/x",
      records: {
        [`${t}-0`]: kafkaCases.map((c, offset) => ({
          ...base,
          offset,
          key: Buffer.from(`k-${offset}`).toString("base64"),
          value: c.value === null ? null : c.value.includes("PGlkPg") ? c.value : c.value,
          headers: c.headers ?? [],
        })),
      },
    };
    // "<id>" inside base64 values: rewrite them per run so dedup keys never collide across runs.
    for (const r of event.records[`${t}-0`]!) {
      if (r.value === null) continue;
      const text = Buffer.from(r.value, "base64").toString("utf8");
      if (text.includes("<id>"))
        r.value = Buffer.from(text.replaceAll("<id>", `p-${run}-${r.offset}`)).toString("base64");
    }
    const response = (await paymentConsumer(event, lambdaContext("payment-consumer", 60_000))) as {
      batchItemFailures: unknown[];
    };
    expect(response.batchItemFailures).toEqual([]);
    const kafka = new Kafka({
      clientId: "bad-inputs",
      brokers: (process.env.KAFKA_BROKERS ?? "").split(","),
      logLevel: logLevel.NOTHING,
    });
    const dead = await readTopic(kafka, `${t}.DLQ`);
    const byOffset = new Map(dead.map((d) => [d.headers["x-original-offset"], d]));
    const outcome: Record<string, string> = {};
    for (const [offset, c] of kafkaCases.entries()) {
      const d = byOffset.get(String(offset));
      outcome[c.name] = d ? (d.headers["x-last-error"]?.split(":")[0] ?? "no context") : "processed";
      if (d) {
        expect(d.headers["x-original-topic"], c.name).toBe(t);
        expect(d.headers["x-consumer"], c.name).toBe("payment-consumer");
      }
    }
    expect(outcome).toEqual(
      Object.fromEntries(kafkaCases.map((c) => [c.name, "dlq" in c.expect ? c.expect.dlq : "processed"])),
    );
    // The good records were charged: their dedup records are COMPLETED.
    const done = (await scanTable(ddb, dedupTable)).filter((i) => i.status?.S === "COMPLETED").length;
    expect(done).toBe(kafkaCases.filter((c) => "processed" in c.expect).length);
  });

  it.each(wrongShapes.filter((s) => s.name !== "an MSK event"))(
    "refuses a wrong event shape as a whole with a typed error: $name",
    async ({ event }) => {
      await expect(paymentConsumer(event, lambdaContext("payment-consumer", 30_000))).rejects.toMatchObject({
        name: "UnknownEventShapeError",
      });
    },
  );
});

describe("bad inputs through the stream consumer (the prebuilt outbox relay)", () => {
  it("malformed outbox items are parked with context; the good event of the batch is published", async () => {
    const uow = createInboxOutbox({ tableName: appTable, scope: "bad-inputs", client: ddb });
    const eventId = { current: "" };
    const r = await uow.run(
      {
        id: `seed-${run}`,
        idSource: "business",
        key: undefined,
        body: {},
        raw: "{}",
        headers: {},
        attempt: 1,
        source: { kind: "sqs", queueArn: "arn:aws:sqs:us-east-1:000000000000:x", messageId: "m" },
      },
      (tx) => {
        eventId.current = tx.publish({
          aggregateType: "audit",
          aggregateId: `a-${run}`,
          eventType: "Audited",
          payload: { ok: true },
          destination: `sqs:${eventsUrl}`,
        });
      },
    );
    expect(r.status).toBe("committed");
    const item = (await scanTable(ddb, appTable)).find((i) => i.eventId?.S === eventId.current)!;
    const image = toLambdaImage(item as never);
    const record = (seq: number, newImage: Record<string, unknown>): DynamoDBRecord => ({
      eventID: `e${seq}`,
      eventName: "INSERT",
      eventVersion: "1.1",
      eventSource: "aws:dynamodb",
      awsRegion: "us-east-1",
      eventSourceARN: `arn:aws:dynamodb:us-east-1:000000000000:table/${appTable}/stream/x`,
      dynamodb: {
        Keys: { pk: newImage.pk as never, sk: newImage.sk as never },
        NewImage: newImage as never,
        SequenceNumber: String(1000 + seq),
        StreamViewType: "NEW_IMAGE",
      },
    });
    const { payload: _payload, ...noPayload } = image;
    const badKey = (suffix: string) => ({
      pk: { S: `OUTBOX#audit#bad-${run}` },
      sk: { S: `EVENT#${suffix}` },
    });
    const events = {
      Records: [
        record(1, { ...noPayload, ...badKey("no-payload") }),
        record(2, { ...image, ...badKey("unknown-destination"), destination: { S: "carrier-pigeon:coop" } }),
        record(3, { ...image, ...badKey("wrong-types"), createdAt: { S: "yesterday" }, eventId: { N: "7" } }),
        record(4, image),
      ],
    };
    const response = (await relay(events, lambdaContext("outbox-relay", 30_000))) as {
      batchItemFailures: unknown[];
    };
    expect(response.batchItemFailures).toEqual([]);
    const parked = await readQueue(sqs, parkingUrl);
    const errors = parked
      .map(
        (m) =>
          JSON.parse(m.MessageAttributes?.["x-failure-context"]?.StringValue ?? "{}")[
            "x-last-error"
          ] as string,
      )
      .map((e) => e?.split(":")[0])
      .sort();
    // An unparseable destination is caught when the item is read: malformed, like the other two.
    expect(errors).toEqual([
      "MalformedOutboxItemError",
      "MalformedOutboxItemError",
      "MalformedOutboxItemError",
    ]);
    for (const m of parked)
      expect(JSON.parse(m.Body!).item, "the whole image is kept for replay").toBeTruthy();
    const published = await readQueue(sqs, eventsUrl);
    expect(published.map((m) => m.MessageAttributes?.["message-id"]?.StringValue)).toEqual([eventId.current]);
  });

  // Found by this suite: the relay used to read any event as a stream batch (`event.Records ?? []`).
  it.each(wrongShapes)(
    "refuses a wrong event shape as a whole with a typed error: $name",
    async ({ event }) => {
      await expect(relay(event, lambdaContext("outbox-relay", 30_000))).rejects.toMatchObject({
        name: "UnknownEventShapeError",
      });
    },
  );
});
