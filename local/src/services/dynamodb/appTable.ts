import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { OUTBOX_TABLE } from "reliable-consumers/outbox";

/**
 * The app table as the CDK construct defines it: pk + sk, on-demand, a stream with new images, the
 * sparse pending GSI (projection ALL) and TTL on `expiresAt`. Holds business items, inbox markers
 * and outbox events.
 */
export function appTableInput(tableName: string): CreateTableCommandInput {
  const { partitionKey, sortKey } = OUTBOX_TABLE.keys;
  const gsi = OUTBOX_TABLE.pendingIndex;
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [
      { AttributeName: partitionKey.name, AttributeType: partitionKey.type },
      { AttributeName: sortKey.name, AttributeType: sortKey.type },
      { AttributeName: gsi.partitionKey.name, AttributeType: gsi.partitionKey.type },
      { AttributeName: gsi.sortKey.name, AttributeType: gsi.sortKey.type },
    ],
    KeySchema: [
      { AttributeName: partitionKey.name, KeyType: "HASH" },
      { AttributeName: sortKey.name, KeyType: "RANGE" },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: OUTBOX_TABLE.pendingIndex.name,
        KeySchema: [
          { AttributeName: gsi.partitionKey.name, KeyType: "HASH" },
          { AttributeName: gsi.sortKey.name, KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: gsi.projection },
      },
    ],
    StreamSpecification: { StreamEnabled: true, StreamViewType: OUTBOX_TABLE.streamViewType },
  };
}

/** Creates the app table on a local emulator; returns its stream ARN. */
export async function createAppTable(client: DynamoDBClient, tableName: string): Promise<string> {
  const created = await client.send(new CreateTableCommand(appTableInput(tableName)));
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: OUTBOX_TABLE.ttlAttribute, Enabled: true },
    }),
  );
  const arn =
    created.TableDescription?.LatestStreamArn ??
    (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table?.LatestStreamArn;
  if (!arn) throw new Error(`table ${tableName} has no stream`);
  return arn;
}
