import { CreateTableCommand, DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { createSqsClient } from "reliable-consumers/sqs";
import { createDedupTable, deleteTable, invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

describe("README examples", () => {
  it("the SQS quickstart stores each order once and parks bad input and rule violations", async () => {
    const { handler } = await import("../../examples/sqsQuickstart.ts");
    await sendAll(sqs, q.url, [
      { body: '{"orderId":"o-1","amountCents":500}' },
      { body: '{"orderId":"o-1","amountCents":500}' },
      { body: '{"orderId":"o-2","amountCents":99999999}' },
      { body: "not json" },
    ]);
    const result = await invokeFromQueue(sqs, handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "quickstart",
    });
    expect(result).toMatchObject({ received: 4, deleted: 4, failed: [] });
    const orders = await ddb.send(new ScanCommand({ TableName: process.env.APP_TABLE_NAME }));
    expect(orders.Items?.map((i) => i.pk?.S)).toEqual(["ORDER#o-1"]);
    expect(await drainQueue(sqs, q.dlqUrl)).toHaveLength(2);
  });
});
