import {
  CreateTableCommand,
  DeleteTableCommand,
  type DynamoDBClient,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { streamReader } from "../../local/src/services/dynamodb/shardReader.ts";
import { dynamodbStreams } from "./clients.ts";

/** A table with a NEW_AND_OLD_IMAGES stream on DynamoDB Local, and a reader of its records. */
export interface StreamedTable {
  readonly tableName: string;
  readonly streamArn: string;
  /** Every record the stream has now (from the trim horizon), in the Lambda event's shape. */
  readonly records: (atLeast: number) => Promise<DynamoDBRecord[]>;
  readonly drop: () => Promise<void>;
}

export async function streamedTable(ddb: DynamoDBClient, tableName: string): Promise<StreamedTable> {
  const out = await ddb.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      BillingMode: "PAY_PER_REQUEST",
      StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" },
    }),
  );
  await waitUntilTableExists({ client: ddb, maxWaitTime: 30 }, { TableName: tableName });
  const streamArn = out.TableDescription!.LatestStreamArn!;
  const region = process.env.AWS_REGION ?? "us-east-1";
  return {
    tableName,
    streamArn,
    // Read with the local runtime's own shard reader (what its event source mapping uses).
    async records(atLeast) {
      for (let attempt = 0; attempt < 50; attempt++) {
        const reader = streamReader(dynamodbStreams(), streamArn, region);
        const all: DynamoDBRecord[] = [];
        for (const shard of await reader.newShards(new Map(), "TRIM_HORIZON"))
          for (let i = 0; i < 20 && !shard.closed; i++) {
            const got = await reader.read(shard, 1000);
            if (got.length === 0) break;
            all.push(...got);
          }
        if (all.length >= atLeast) return all;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`the stream of ${tableName} did not have ${atLeast} records`);
    },
    drop: async () => {
      await ddb.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
    },
  };
}

/** The records as one Lambda event, from `fromSequence` on (inclusive), as after a partial batch response. */
export function streamBatchFrom(
  records: ReadonlyArray<DynamoDBRecord>,
  fromSequence?: string,
): DynamoDBStreamEvent {
  const from = fromSequence === undefined ? undefined : BigInt(fromSequence);
  return {
    Records: records.filter((r) => from === undefined || BigInt(r.dynamodb!.SequenceNumber!) >= from),
  };
}
