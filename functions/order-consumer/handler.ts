import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { sqsConsumer } from "../../lib/middleware/sqsConsumer.ts";
import { Order } from "./order.ts";

const ddb = new DynamoDBClient({});
const table = process.env.APP_TABLE_NAME ?? "app";

/**
 * Idempotent order intake: the dedup key is the business key (orderId), so a producer's resend and
 * SQS's own redelivery both apply once. Invalid orders go to the DLQ with their context.
 */
export const handler = sqsConsumer<Order>(
  async ({ body: order }) => {
    await ddb.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          pk: { S: `ORDER#${order.orderId}` },
          sk: { S: "ORDER" },
          customerId: { S: order.customerId },
          amountCents: { N: String(order.amountCents) },
          itemCount: { N: String(order.items.length) },
          createdAt: { S: new Date().toISOString() },
        },
      }),
    );
  },
  { schema: Order, key: (order) => order.orderId, telemetry: { serviceName: "order-consumer" } },
);
