// The streams guide's Kinesis example (docs/streams.md includes the region);
// test/integration/examples.test.ts runs it against the emulators.
// #region handler
import { DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { PermanentError } from "reliable-consumers";
import { kinesisConsumer } from "reliable-consumers/kinesis";
import { z } from "zod";

const Click = z.object({ clickId: z.string(), page: z.string(), bot: z.boolean().default(false) });
const ddb = new DynamoDBClient({});

export const handler = kinesisConsumer<z.infer<typeof Click>>(
  async ({ body: click }) => {
    if (click.bot) throw new PermanentError("bot traffic"); // → parked in DLQ_URL with its context
    // Not idempotent by nature (ADD): the dedup store is what keeps a resent record from counting twice.
    await ddb.send(
      new UpdateItemCommand({
        TableName: process.env.APP_TABLE_NAME,
        Key: { pk: { S: `PAGE#${click.page}` }, sk: { S: "CLICKS" } },
        UpdateExpression: "ADD clicks :one",
        ExpressionAttributeValues: { ":one": { N: "1" } },
      }),
    );
  },
  {
    schema: Click, // invalid JSON or schema → parked, the shard moves on
    key: (click) => click.clickId, // a producer's retried PutRecord has a new sequence number, not a new clickId
    ordering: "key", // partition keys side by side, each in order
    idempotency: { tableName: process.env.DEDUP_TABLE_NAME },
  },
);
// #endregion handler
