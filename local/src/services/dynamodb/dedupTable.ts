import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DeleteTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { DEDUP_TABLE } from "reliable-consumers";

/** The dedup table as the CDK construct defines it: `pk` only, on-demand, TTL on `expiresAt`. */
export function dedupTableInput(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [{ AttributeName: DEDUP_TABLE.partitionKey, AttributeType: "S" }],
    KeySchema: [{ AttributeName: DEDUP_TABLE.partitionKey, KeyType: "HASH" }],
  };
}

/** Creates a dedup table on a local emulator (tests, benchmarks, demos). */
export async function createDedupTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(new CreateTableCommand(dedupTableInput(tableName)));
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: DEDUP_TABLE.ttlAttribute, Enabled: true },
    }),
  );
}

/** Deletes a table, if it exists. */
export async function deleteTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DeleteTableCommand({ TableName: tableName }));
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
}
