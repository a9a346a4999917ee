// The effect both handlers of the migration guide run (docs/migrating-from-powertools.md): it counts
// its runs on the order's item, so a test sees an effect that ran twice.
import { DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";

const ddb = new DynamoDBClient({});

/** Adds one to the `runs` of `ORDER#<orderId>` in APP_TABLE_NAME. */
export async function recordOrder(order: { orderId: string }): Promise<void> {
  await ddb.send(
    new UpdateItemCommand({
      TableName: process.env.APP_TABLE_NAME,
      Key: { pk: { S: `ORDER#${order.orderId}` }, sk: { S: "ORDER" } },
      UpdateExpression: "ADD runs :one",
      ExpressionAttributeValues: { ":one": { N: "1" } },
    }),
  );
}
