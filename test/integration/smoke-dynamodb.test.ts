import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";
import { GetRecordsCommand, GetShardIteratorCommand } from "@aws-sdk/client-dynamodb-streams";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamodb, dynamodbStreams } from "../support/clients.ts";
import { names } from "../support/names.ts";

const name = names(import.meta.url);
const table = name("table");
const ddb = dynamodb();
const streams = dynamodbStreams();

beforeAll(async () => {
  await ddb.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" },
    }),
  );
});

afterAll(async () => {
  await ddb.send(new DeleteTableCommand({ TableName: table }));
});

describe("DynamoDB Local smoke", () => {
  it("returns the old item when a conditional put fails (ReturnValuesOnConditionCheckFailure)", async () => {
    const put = (v: string) =>
      ddb.send(
        new PutItemCommand({
          TableName: table,
          Item: { pk: { S: "k1" }, v: { S: v } },
          ConditionExpression: "attribute_not_exists(pk)",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
    await put("first");
    const error = await put("second").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    expect((error as ConditionalCheckFailedException).Item).toEqual({ pk: { S: "k1" }, v: { S: "first" } });
  });

  it("reads the INSERT back from the table's stream", async () => {
    const { Table } = await ddb.send(new DescribeTableCommand({ TableName: table }));
    const streamArn = Table?.LatestStreamArn;
    expect(streamArn).toBeTruthy();
    const { StreamDescription } = await streams.send(
      new (await import("@aws-sdk/client-dynamodb-streams")).DescribeStreamCommand({ StreamArn: streamArn }),
    );
    const shardId = StreamDescription?.Shards?.[0]?.ShardId;
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shardId,
        ShardIteratorType: "TRIM_HORIZON",
      }),
    );
    const { Records } = await streams.send(new GetRecordsCommand({ ShardIterator }));
    const insert = Records?.find((r) => r.eventName === "INSERT");
    expect(insert?.dynamodb?.Keys).toEqual({ pk: { S: "k1" } });
    expect(insert?.dynamodb?.NewImage?.v).toEqual({ S: "first" });
  });
});
