/**
 * The DynamoDB Streams shard reader (what the local stream mappings read with) on DynamoDB Local,
 * with `TrimmedDataAccessException` injected into the real Streams client's GetRecords. Lambda
 * never gives a shard up for that answer: it reads on from the oldest record still kept. DynamoDB
 * Local gives it, at first, for the first shard of a stream made in the same instant as its table
 * (seen in the packed consumer-app's run), and the reader used to close the shard for good.
 */
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStreamsClient, TrimmedDataAccessException } from "@aws-sdk/client-dynamodb-streams";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamodb } from "../../../test/support/clients.ts";
import { type StreamedTable, streamedTable } from "../../../test/support/dynamodbStreamEvents.ts";
import { names } from "../../../test/support/names.ts";
import { streamReader } from "../../src/services/dynamodb/shardReader.ts";

const name = names(import.meta.url);
const ddb = dynamodb();
let table: StreamedTable;

/** A Streams client whose first `trimmed` GetRecords calls answer TrimmedDataAccessException. */
function trimmingClient(trimmed: number): DynamoDBStreamsClient {
  const client = new DynamoDBStreamsClient({});
  let left = trimmed;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === "GetRecordsCommand" && left > 0) {
        left--;
        throw new TrimmedDataAccessException({ message: "injected", $metadata: {} });
      }
      return next(args);
    },
    { step: "initialize", name: "injectTrimmed" },
  );
  return client;
}

beforeAll(async () => {
  table = await streamedTable(ddb, name("Trimmed"));
  for (const pk of ["a", "b", "c"])
    await ddb.send(new PutItemCommand({ TableName: table.tableName, Item: { pk: { S: pk } } }));
  await table.records(3);
}, 60_000);

afterAll(async () => {
  await table?.drop();
  ddb.destroy();
});

/** Reads the stream's shards until `want` records came or `reads` GetRecords were made. */
async function readAll(client: DynamoDBStreamsClient, want: number, warnings: string[]) {
  const reader = streamReader(client, table.streamArn, "us-east-1", (m) => warnings.push(m));
  const shards = await reader.newShards(new Map(), "TRIM_HORIZON");
  const keys: string[] = [];
  for (let reads = 0; reads < 20 && keys.length < want; reads++)
    for (const shard of shards.filter((s) => !s.closed))
      keys.push(...(await reader.read(shard, 100)).map((r) => r.dynamodb!.Keys!.pk!.S!));
  return { keys, closed: shards.every((s) => s.closed) };
}

describe("the local stream mappings' shard reader", () => {
  it("reads on from the trim horizon after TrimmedDataAccessException, as Lambda does", async () => {
    const client = trimmingClient(1);
    const warnings: string[] = [];
    try {
      const { keys } = await readAll(client, 3, warnings);
      expect(keys).toEqual(["a", "b", "c"]);
      // Nothing was read before the answer: nothing was lost, so nothing to warn of.
      expect(warnings).toEqual([]);
    } finally {
      client.destroy();
    }
  });

  it("closes a shard that keeps answering so, with a warning, instead of spinning on it", async () => {
    const client = trimmingClient(Number.POSITIVE_INFINITY);
    const warnings: string[] = [];
    try {
      const { keys, closed } = await readAll(client, 3, warnings);
      expect(keys).toEqual([]);
      expect(closed).toBe(true);
      expect(warnings.some((w) => w.includes("trimmed past the checkpoint"))).toBe(true);
    } finally {
      client.destroy();
    }
  });
});
