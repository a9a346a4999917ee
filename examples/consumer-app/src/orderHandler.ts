// README "Install": the handler. Idempotent on DEDUP_TABLE_NAME, partial batch responses, DLQ on bad input.
// #region handler
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { sqsConsumer } from "reliable-consumers/sqs";

const ddb = new DynamoDBClient({});

export const handler = sqsConsumer<{ orderId: string }>(
  async ({ body }) => {
    await ddb.send(
      new PutItemCommand({ TableName: process.env.ORDERS_TABLE_NAME, Item: { pk: { S: body.orderId } } }),
    );
  },
  { key: (order) => order.orderId },
);
// #endregion handler
