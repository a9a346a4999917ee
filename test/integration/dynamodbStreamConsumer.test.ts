import {
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, DeleteQueueCommand } from "@aws-sdk/client-sqs";
import type { DynamoDBStreamEvent } from "aws-lambda";
import { METRIC, TransientError } from "reliable-consumers";
import { type DynamoDbStreamEnvelope, dynamodbStreamConsumer } from "reliable-consumers/dynamodb-streams";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { CONTEXT_ATTRIBUTE } from "../../lib/sqs/attributePacking.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { dynamodb } from "../support/clients.ts";
import { type StreamedTable, streamBatchFrom, streamedTable } from "../support/dynamodbStreamEvents.ts";
import { names } from "../support/names.ts";
import { drainQueue } from "../support/queues.ts";
import { countRequests } from "../support/requestCounter.ts";
import { SQS_NAME } from "../support/sqsSubstrate.ts";
import { recordingTelemetry } from "../support/telemetry.ts";

const name = names(import.meta.url);
const dedup = name("dedup");
const ddb = dynamodb();
const sqs = createSqsClient();
const queueUrls: string[] = [];
const tables: StreamedTable[] = [];

beforeAll(() => createDedupTable(ddb, dedup));
afterAll(async () => {
  await deleteTable(ddb, dedup);
  await Promise.all(tables.map((t) => t.drop()));
  await Promise.allSettled(queueUrls.map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))));
});

async function parkingQueue(what: string): Promise<string> {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name(what) }))).QueueUrl!;
  queueUrls.push(url);
  return url;
}

async function table(what: string): Promise<StreamedTable> {
  const t = await streamedTable(ddb, name(what));
  tables.push(t);
  return t;
}

const Order = z.object({ pk: z.string(), total: z.number() });
type Order = z.infer<typeof Order>;

const put = (t: StreamedTable, pk: string, total: unknown) =>
  ddb.send(
    new PutItemCommand({
      TableName: t.tableName,
      Item: { pk: { S: pk }, total: typeof total === "number" ? { N: String(total) } : { S: String(total) } },
    }),
  );

const invoke = (
  handler: (e: DynamoDBStreamEvent, c: ReturnType<typeof lambdaContext>) => Promise<unknown>,
  event: DynamoDBStreamEvent,
) =>
  handler(event, lambdaContext("ddb-fn", 60_000)) as Promise<{
    batchItemFailures: { itemIdentifier: string }[];
  }>;

describe(`dynamodbStreamConsumer on DynamoDB Local's stream, parking on ${SQS_NAME}`, () => {
  it("unmarshals INSERT, MODIFY and REMOVE; the body is the new image (the old one for REMOVE); a TTL delete is told apart", async () => {
    const t = await table("images");
    await put(t, "o1", 10);
    await ddb.send(
      new UpdateItemCommand({
        TableName: t.tableName,
        Key: { pk: { S: "o1" } },
        UpdateExpression: "SET #t = :t",
        ExpressionAttributeNames: { "#t": "total" },
        ExpressionAttributeValues: { ":t": { N: "12" } },
      }),
    );
    await ddb.send(new DeleteItemCommand({ TableName: t.tableName, Key: { pk: { S: "o1" } } }));
    const records = await t.records(3);
    // DynamoDB Local does not run TTL on demand: a copy of the REMOVE as AWS marks a TTL delete.
    const ttlRemove = {
      ...records[2]!,
      eventID: `${records[2]!.eventID}-ttl`,
      userIdentity: { type: "Service", principalId: "dynamodb.amazonaws.com" },
    };
    const seen: DynamoDbStreamEnvelope<Order>[] = [];
    const handler = dynamodbStreamConsumer<Order>((e) => void seen.push(e), {
      schema: Order,
      idempotency: { tableName: dedup, scope: name("images") },
      parkingQueueUrl: await parkingQueue("images"),
    });
    expect(await invoke(handler, { Records: [...records, ttlRemove] })).toEqual({ batchItemFailures: [] });
    expect(seen.map((e) => [e.eventName, e.body, e.removedByTtl])).toEqual([
      ["INSERT", { pk: "o1", total: 10 }, false],
      ["MODIFY", { pk: "o1", total: 12 }, false],
      ["REMOVE", { pk: "o1", total: 12 }, false],
      ["REMOVE", { pk: "o1", total: 12 }, true],
    ]);
    expect(seen[1]).toMatchObject({
      keys: { pk: "o1" },
      oldImage: { pk: "o1", total: 10 },
      newImage: { pk: "o1", total: 12 },
      id: records[1]!.eventID,
      idSource: "broker",
      streamArn: t.streamArn,
      sequenceNumber: records[1]!.dynamodb!.SequenceNumber,
      source: { kind: "dynamodb-stream", streamArn: t.streamArn },
    });
    expect(seen[2]!.newImage).toBeUndefined();
  });

  it("a failure stops the shard; Lambda's resend from the reported sequence number runs each change once", async () => {
    const t = await table("resend");
    for (let i = 1; i <= 5; i++) await put(t, `o${i}`, i);
    const records = await t.records(5);
    const runs = new Map<string, number>();
    let failedOnce = false;
    const telemetry = recordingTelemetry();
    const handler = dynamodbStreamConsumer<Order>(
      ({ body }) => {
        if (body.pk === "o3" && !failedOnce) {
          failedOnce = true;
          throw new TransientError("downstream busy");
        }
        runs.set(body.pk, (runs.get(body.pk) ?? 0) + 1);
      },
      {
        schema: Order,
        idempotency: { tableName: dedup, scope: name("resend") },
        parkingQueueUrl: await parkingQueue("resend"),
        telemetry,
      },
    );
    const o3 = records[2]!.dynamodb!.SequenceNumber!;
    expect(await invoke(handler, streamBatchFrom(records))).toEqual({
      batchItemFailures: [{ itemIdentifier: o3 }],
    });
    expect([...runs.keys()]).toEqual(["o1", "o2"]);
    expect(await invoke(handler, streamBatchFrom(records, o3))).toEqual({ batchItemFailures: [] });
    // Lambda resending the whole batch (a lost answer): nothing runs again.
    expect(await invoke(handler, streamBatchFrom(records))).toEqual({ batchItemFailures: [] });
    expect(Object.fromEntries(runs)).toEqual({ o1: 1, o2: 1, o3: 1, o4: 1, o5: 1 });
    expect(telemetry.counts[METRIC.duplicates]).toBe(5);
  });

  it("ordering 'key': other items go on past a failure; the resend runs only what had not run", async () => {
    const t = await table("keys");
    await put(t, "a", 1);
    await put(t, "b", 1);
    await put(t, "a", 2);
    await put(t, "b", 2);
    const records = await t.records(4);
    const ran: string[] = [];
    let failedOnce = false;
    const handler = dynamodbStreamConsumer<Order>(
      ({ body }) => {
        if (body.pk === "a" && body.total === 1 && !failedOnce) {
          failedOnce = true;
          throw new TransientError("busy");
        }
        ran.push(`${body.pk}${body.total}`);
      },
      {
        schema: Order,
        ordering: "key",
        idempotency: { tableName: dedup, scope: name("keys") },
        parkingQueueUrl: await parkingQueue("keys"),
      },
    );
    const a1 = records[0]!.dynamodb!.SequenceNumber!;
    expect(await invoke(handler, streamBatchFrom(records))).toEqual({
      batchItemFailures: [{ itemIdentifier: a1 }],
    });
    expect(ran).toEqual(["b1", "b2"]);
    expect(await invoke(handler, streamBatchFrom(records, a1))).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual(["b1", "b2", "a1", "a2"]);
  });

  it("parks a change that fails the schema with the record and its context; filters event names", async () => {
    const t = await table("poison");
    await put(t, "good", 1);
    await put(t, "bad", "not a number");
    await ddb.send(new DeleteItemCommand({ TableName: t.tableName, Key: { pk: { S: "good" } } }));
    await put(t, "after", 3);
    const records = await t.records(4);
    const parking = await parkingQueue("poison");
    const ran: string[] = [];
    const handler = dynamodbStreamConsumer<Order>(({ body }) => void ran.push(body.pk), {
      schema: Order,
      eventNames: ["INSERT", "MODIFY"],
      consumer: "orders-projection",
      idempotency: { tableName: dedup, scope: name("poison") },
      parkingQueueUrl: parking,
    });
    expect(await invoke(handler, streamBatchFrom(records))).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual(["good", "after"]);
    const parked = await drainQueue(sqs, parking);
    expect(parked).toHaveLength(1);
    expect(JSON.parse(parked[0]!.Body!)).toEqual(records[1]);
    const context = JSON.parse(parked[0]!.MessageAttributes![CONTEXT_ATTRIBUTE]!.StringValue!);
    expect(context).toMatchObject({
      "x-original-topic": t.streamArn,
      "x-original-offset": records[1]!.dynamodb!.SequenceNumber,
      "x-message-id": records[1]!.eventID,
      "x-consumer": "orders-projection",
    });
    expect(context["x-last-error"]).toMatch(/^SchemaValidationError: /);
  });

  it("changes filtered out by eventNames are neither claimed nor released", async () => {
    const t = await table("filtered");
    await put(t, "f1", 1);
    await ddb.send(new DeleteItemCommand({ TableName: t.tableName, Key: { pk: { S: "f1" } } }));
    await put(t, "f2", 2);
    const records = await t.records(3);
    const client = new DynamoDBClient({});
    const requests = countRequests(client);
    const ran: string[] = [];
    const handler = dynamodbStreamConsumer<Order>(({ body }) => void ran.push(body.pk), {
      schema: Order,
      eventNames: ["INSERT"],
      dynamodbClient: client,
      idempotency: { tableName: dedup, scope: name("filtered") },
      parkingQueueUrl: await parkingQueue("filtered"),
    });
    expect(await invoke(handler, streamBatchFrom(records))).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual(["f1", "f2"]);
    // A claim ahead of the REMOVE would have been given back with a DeleteItem.
    expect(requests.byCommand.DeleteItemCommand).toBeUndefined();
  });

  it("rejects an event of another shape", async () => {
    const handler = dynamodbStreamConsumer(() => undefined, {
      idempotency: false,
      parkingQueueUrl: "unused",
    });
    await expect(
      invoke(handler, { Records: [{ eventSource: "aws:kinesis" }] } as never),
    ).rejects.toMatchObject({
      name: "UnknownEventShapeError",
    });
  });
});
