// The README's SQS example, verbatim, and the guides' (docs/sqs.md includes the region);
// test/integration/examples.test.ts runs it against the emulators.
// #region handler
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { PermanentError } from "reliable-consumers";
import { sqsConsumer } from "reliable-consumers/sqs";
import { z } from "zod";

const Order = z.object({ orderId: z.string(), amountCents: z.number().int().positive() });
const ddb = new DynamoDBClient({});

export const handler = sqsConsumer<z.infer<typeof Order>>(
  async ({ body: order }) => {
    if (order.amountCents > 1_000_000) throw new PermanentError("over the order limit"); // → DLQ at once
    await ddb.send(
      new PutItemCommand({
        TableName: process.env.APP_TABLE_NAME,
        Item: { pk: { S: `ORDER#${order.orderId}` }, sk: { S: "ORDER" } },
      }),
    );
  },
  {
    schema: Order, // invalid JSON or schema → DLQ with context, never retried
    key: (order) => order.orderId, // the business dedup key
    idempotency: { tableName: process.env.DEDUP_TABLE_NAME }, // scope defaults to the function name
  },
);
// #endregion handler
