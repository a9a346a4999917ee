import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { GetItemCommand, PutItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { disconnectAllKafkaProducers } from "reliable-consumers/kafka";
import { invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAppTable } from "../../local/src/services/dynamodb/appTable.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import type { SqsLambdaHandler } from "../../local/src/services/sqs/trigger.ts";
import { dynamodb, sqs as sqsClient } from "../support/clients.ts";
import { declareTopics, lambdaContext, tapTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, drainQueue, sendAll, type TestQueue } from "../support/queues.ts";

/**
 * The guides' examples that talk to Kafka and DynamoDB, run as the guides show them
 * (docs/kafka.md, docs/outbox.md; the migration guide's run in migrateFromPowertools.test.ts).
 * Each example reads its environment when it is imported, so every test sets it first and
 * imports the example itself.
 */
const name = names(import.meta.url);
const ddb = dynamodb();
const sqs = sqsClient();
const dedupTable = name("dedup");
const appTable = name("app");
const queues: TestQueue[] = [];

beforeAll(async () => {
  await createDedupTable(ddb, dedupTable);
  await createAppTable(ddb, appTable);
  Object.assign(process.env, {
    DEDUP_TABLE_NAME: dedupTable,
    APP_TABLE_NAME: appTable,
  });
});
afterAll(async () => {
  await disconnectAllKafkaProducers();
  for (const q of queues) await deleteQueues(sqs, q);
  for (const t of [dedupTable, appTable]) await deleteTable(ddb, t);
});

async function queue(what: string): Promise<TestQueue> {
  const q = await createQueueWithDlq(sqs, name(what));
  queues.push(q);
  return q;
}

/** A payment provider on 127.0.0.1: answers 503 for the orders in `failing`, 201 otherwise. */
async function paymentProvider(failing: Set<string>): Promise<{ server: Server; charges: string[] }> {
  const charges: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const { orderId } = JSON.parse(body) as { orderId: string };
      if (failing.has(orderId)) return res.writeHead(503).end();
      charges.push(`${orderId} ${req.headers["idempotency-key"]}`);
      res.writeHead(201).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  process.env.PAYMENT_GATEWAY_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, charges };
}

describe("docs/kafka.md: the payment consumer", () => {
  it("charges each order once; a transient failure goes to .retry.5s, a permanent one and bad input to .DLQ", async () => {
    const topic = name("order-events");
    await declareTopics([
      topic,
      `${topic}.retry.5s`,
      `${topic}.retry.1m`,
      `${topic}.retry.10m`,
      `${topic}.DLQ`,
    ]);
    const tap = await tapTopics([`${topic}.retry.5s`, `${topic}.DLQ`], name("tap"));
    const provider = await paymentProvider(new Set(["o-flaky"]));
    try {
      const { handler } = await import("../../examples/kafkaPayments.ts");
      const b64 = (s: string) => Buffer.from(s).toString("base64");
      const order = (offset: number, orderId: string, amountCents: number) => ({
        topic,
        partition: 0,
        offset,
        timestamp: Date.now(),
        timestampType: "CREATE_TIME",
        key: b64(orderId),
        value: b64(JSON.stringify({ orderId, customerId: "c-1", amountCents })),
        headers: [],
      });
      const event = {
        eventSource: "aws:kafka",
        records: {
          [`${topic}-0`]: [
            order(0, "o-1", 1_500),
            order(1, "o-1", 1_500), // a resend: the same business key
            order(2, "o-big", 2_000_000), // PermanentError
            order(3, "o-flaky", 900), // the provider answers 503
            { ...order(4, "o-bad", 1), value: b64('{"orderId":"o-bad"}') }, // schema mismatch
          ],
        },
      };
      expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
      expect(provider.charges).toEqual(["o-1 payment:o-1"]);
      const retried = await tap.take(`${topic}.retry.5s`, 1);
      expect(retried[0]!.message.headers?.["x-last-error"]?.toString()).toMatch(
        /^Error: payment provider answered 503/,
      );
      const dead = await tap.take(`${topic}.DLQ`, 2);
      expect(dead.map((d) => d.message.headers?.["x-last-error"]?.toString().split(":")[0]).sort()).toEqual([
        "PermanentError",
        "SchemaValidationError",
      ]);
    } finally {
      await tap.stop();
      provider.server.close();
    }
  });
});

describe("docs/outbox.md: the unit of work and the sweeper", () => {
  it("reserves once, writes its event with the reservation, parks an out-of-stock order; the sweeper leaves a young event", async () => {
    await ddb.send(
      new PutItemCommand({
        TableName: appTable,
        Item: { pk: { S: "STOCK#A" }, sk: { S: "STOCK" }, qty: { N: "1" } },
      }),
    );
    await ddb.send(
      new PutItemCommand({
        TableName: appTable,
        Item: { pk: { S: "STOCK#B" }, sk: { S: "STOCK" }, qty: { N: "0" } },
      }),
    );
    const q = await queue("reservations");
    const { handler } = await import("../../examples/outboxReservation.ts");
    await sendAll(sqs, q.url, [
      { body: '{"orderId":"o-1","sku":"A"}' },
      { body: '{"orderId":"o-1","sku":"A"}' }, // a resend
      { body: '{"orderId":"o-2","sku":"B"}' }, // none in stock
    ]);
    const result = await invokeFromQueue(sqs, handler as SqsLambdaHandler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "reservation-consumer",
    });
    expect(result).toMatchObject({ received: 3, deleted: 3, failed: [] });
    const stock = await ddb.send(
      new GetItemCommand({ TableName: appTable, Key: { pk: { S: "STOCK#A" }, sk: { S: "STOCK" } } }),
    );
    expect(stock.Item?.qty?.N).toBe("0");
    const events = await ddb.send(
      new QueryCommand({
        TableName: appTable,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": { S: "OUTBOX#order#o-1" } },
      }),
    );
    expect(events.Items?.filter((i) => i.sk?.S?.startsWith("EVENT#")).map((i) => i.eventType?.S)).toEqual([
      "StockReserved",
    ]);
    const parked = await drainQueue(sqs, q.dlqUrl);
    expect(parked.map((m) => m.Body)).toEqual(['{"orderId":"o-2","sku":"B"}']);
    expect(JSON.stringify(parked[0]!.MessageAttributes)).toContain("OutOfStockError: stock is 0");

    const { sweepOnce } = await import("../../examples/outboxSweep.ts");
    expect(await sweepOnce(appTable)).toMatchObject({ due: 0, republished: 0, pendingCount: 1 });
  });
});
