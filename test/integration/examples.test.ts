import {
  CreateTableCommand,
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  ScanCommand,
} from "@aws-sdk/client-dynamodb";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { type StreamedTable, streamedTable } from "../support/dynamodbStreamEvents.ts";
import { batchFrom, putRecords, testShard } from "../support/kinesisEvents.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, drainQueue, sendAll, type TestQueue } from "../support/queues.ts";

const name = names(import.meta.url);
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
let q: TestQueue;

beforeAll(async () => {
  process.env.APP_TABLE_NAME = name("app");
  process.env.DEDUP_TABLE_NAME = name("dedup");
  await createDedupTable(ddb, process.env.DEDUP_TABLE_NAME);
  await ddb.send(
    new CreateTableCommand({
      TableName: process.env.APP_TABLE_NAME,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        { AttributeName: "pk", AttributeType: "S" },
        { AttributeName: "sk", AttributeType: "S" },
      ],
      KeySchema: [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ],
    }),
  );
  q = await createQueueWithDlq(sqs, name("orders"));
});
afterAll(async () => {
  await deleteTable(ddb, process.env.APP_TABLE_NAME!);
  await deleteTable(ddb, process.env.DEDUP_TABLE_NAME!);
  await deleteQueues(sqs, q);
});

// The README's and the guides' SQS examples: examples/sqsQuickstart.ts run through
// examples/localTrigger.ts (one receive and invocation, as Lambda's trigger), examples/dlqRedrive.ts.
describe("README and guide examples (SQS)", () => {
  it("the SQS quickstart stores each order once and parks bad input and rule violations", async () => {
    const { runQuickstartOnce } = await import("../../examples/localTrigger.ts");
    await sendAll(sqs, q.url, [
      { body: '{"orderId":"o-1","amountCents":500}' },
      { body: '{"orderId":"o-1","amountCents":500}' },
      { body: '{"orderId":"o-2","amountCents":99999999}' },
      { body: "not json" },
    ]);
    const result = await runQuickstartOnce(q.url, q.arn);
    expect(result).toMatchObject({ received: 4, deleted: 4, failed: [] });
    const orders = await ddb.send(new ScanCommand({ TableName: process.env.APP_TABLE_NAME }));
    expect(orders.Items?.map((i) => i.pk?.S)).toEqual(["ORDER#o-1"]);
    expect(await drainQueue(sqs, q.dlqUrl)).toHaveLength(2);
  });

  it("the DLQ guide's redrive moves the rule violation back to its queue and leaves the bad JSON", async () => {
    const { runQuickstartOnce } = await import("../../examples/localTrigger.ts");
    const { redriveRuleViolations } = await import("../../examples/dlqRedrive.ts");
    await sendAll(sqs, q.url, [{ body: '{"orderId":"o-9","amountCents":99999999}' }, { body: "not json" }]);
    expect(await runQuickstartOnce(q.url, q.arn)).toMatchObject({ received: 2, deleted: 2, failed: [] });
    const moved = await redriveRuleViolations(q.dlqUrl);
    expect(moved).toMatchObject({ moved: 1, failed: 0 });
    const back = await drainQueue(sqs, q.url);
    expect(back.map((m) => m.Body)).toEqual(['{"orderId":"o-9","amountCents":99999999}']);
    const left = await drainQueue(sqs, q.dlqUrl);
    expect(left.map((m) => m.Body)).toEqual(["not json"]);
  });
});

// The streams guide's examples: the handlers invoked with events as Lambda builds them (Kinesis),
// and with the real records of DynamoDB Local's stream.
describe("streams guide examples", () => {
  const scanKeys = async () =>
    ((await ddb.send(new ScanCommand({ TableName: process.env.APP_TABLE_NAME }))).Items ?? []).map((i) => ({
      pk: i.pk?.S,
      clicks: i.clicks?.N,
      status: i.status?.S,
    }));

  it("the Kinesis example counts each click once across a resend, and parks bot traffic", async () => {
    process.env.DLQ_URL = q.dlqUrl;
    const { handler } = await import("../../examples/kinesisConsumer.ts");
    const shard = testShard(name("clicks"));
    putRecords(shard, [
      { data: { clickId: "c1", page: "home" }, partitionKey: "u1" },
      { data: { clickId: "c2", page: "home" }, partitionKey: "u2" },
      // A producer's retried PutRecord: the same click under a new sequence number.
      { data: { clickId: "c1", page: "home" }, partitionKey: "u1" },
      { data: { clickId: "c3", page: "home", bot: true }, partitionKey: "u3" },
    ]);
    const ctx = lambdaContext("clicks", 60_000);
    expect(await handler(batchFrom(shard), ctx)).toEqual({ batchItemFailures: [] });
    // Lambda resending the batch (say, the answer was lost).
    expect(await handler(batchFrom(shard), ctx)).toEqual({ batchItemFailures: [] });
    expect(await scanKeys()).toContainEqual({ pk: "PAGE#home", clicks: "2", status: undefined });
    const parked = await drainQueue(sqs, q.dlqUrl);
    expect(parked.map((m) => JSON.parse(m.Body!))).toEqual([{ clickId: "c3", page: "home", bot: true }]);
  });

  it("the DynamoDB Streams example keeps a summary per order, and drops it on a user's delete", async () => {
    const { handler } = await import("../../examples/dynamodbStreamConsumer.ts");
    const orders: StreamedTable = await streamedTable(ddb, name("orders-table"));
    try {
      const item = (pk: string, status: string) => ({
        pk: { S: pk },
        status: { S: status },
        totalCents: { N: "500" },
      });
      await ddb.send(new PutItemCommand({ TableName: orders.tableName, Item: item("o-1", "NEW") }));
      await ddb.send(new PutItemCommand({ TableName: orders.tableName, Item: item("o-2", "NEW") }));
      await ddb.send(new PutItemCommand({ TableName: orders.tableName, Item: item("o-1", "PAID") }));
      await ddb.send(new DeleteItemCommand({ TableName: orders.tableName, Key: { pk: { S: "o-2" } } }));
      const records = await orders.records(4);
      const ctx = lambdaContext("orders-projection", 60_000);
      expect(await handler({ Records: records }, ctx)).toEqual({ batchItemFailures: [] });
      const summaries = (await scanKeys()).filter((i) => i.pk?.startsWith("SUMMARY#"));
      expect(summaries).toEqual([{ pk: "SUMMARY#o-1", clicks: undefined, status: "PAID" }]);
    } finally {
      await orders.drop();
    }
  });
});
