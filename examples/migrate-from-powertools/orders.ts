// The app's own code, the same before and after the migration: what one message does.
// docs/migrating-from-powertools.md includes these files; test/integration/migrateFromPowertools.test.ts runs them.
import { DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";

// #region order
/** An order message's body. */
export interface Order {
  readonly orderId: string;
  readonly amountCents: number;
}

/** One client per container, shared by every invocation. */
export const ddb = new DynamoDBClient({});

/** Charges an order. Not idempotent by nature (each run adds a charge): the reason for dedup. */
export async function chargeOrder(order: Order): Promise<void> {
  await ddb.send(
    new UpdateItemCommand({
      TableName: process.env.APP_TABLE_NAME,
      Key: { pk: { S: `ORDER#${order.orderId}` } },
      UpdateExpression: "ADD charges :one, chargedCents :amount",
      ExpressionAttributeValues: { ":one": { N: "1" }, ":amount": { N: String(order.amountCents) } },
    }),
  );
}
// #endregion order
