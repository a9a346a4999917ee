// The streams guide's DynamoDB Streams example (docs/streams.md includes the region);
// test/integration/examples.test.ts runs it against DynamoDB Local's stream.
// #region handler
import { DeleteItemCommand, DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { dynamodbStreamConsumer } from "reliable-consumers/dynamodb-streams";
import { z } from "zod";

const Order = z.object({ pk: z.string(), status: z.string(), totalCents: z.number().int() });
const ddb = new DynamoDBClient({});
const projection = (orderId: string) => ({ pk: { S: `SUMMARY#${orderId}` }, sk: { S: "SUMMARY" } });

export const handler = dynamodbStreamConsumer<z.infer<typeof Order>>(
  async ({ eventName, body: order, removedByTtl }) => {
    // The body is the new image (the old image for REMOVE), unmarshalled and checked by the schema.
    if (eventName === "REMOVE") {
      // Expired by TTL: archived, keep its summary. Deleted by a user: drop it.
      if (!removedByTtl)
        await ddb.send(
          new DeleteItemCommand({ TableName: process.env.APP_TABLE_NAME, Key: projection(order.pk) }),
        );
      return;
    }
    await ddb.send(
      new PutItemCommand({
        TableName: process.env.APP_TABLE_NAME,
        Item: {
          ...projection(order.pk),
          status: { S: order.status },
          totalCents: { N: String(order.totalCents) },
        },
      }),
    );
  },
  {
    schema: Order,
    ordering: "key", // items side by side, each item's changes in order
    idempotency: { tableName: process.env.DEDUP_TABLE_NAME }, // keyed by the record's eventID
  },
);
// #endregion handler
