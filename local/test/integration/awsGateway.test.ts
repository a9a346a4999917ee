/**
 * Issue 21: the quotas the gateway enforces because fauxqs lets them through (each checked against
 * fauxqs first: it already refuses 11 batch entries, 1 MiB messages and batches, and visibility
 * above 12 h in one call), answered in SQS's own words; and queue URLs that resolve as printed.
 */

import {
  BatchExecuteStatementCommand,
  BatchWriteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  TransactWriteItemsCommand,
} from "@aws-sdk/client-dynamodb";
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { names } from "../../../test/support/names.ts";
import { type AwsGateway, startAwsGateway } from "../../src/enforcement/awsGateway.ts";
import { createDenialLog } from "../../src/enforcement/denials.ts";
import { createDedupTable } from "../../src/services/dynamodb/dedupTable.ts";

const name = names(import.meta.url);
let gateway: AwsGateway;
let now = Date.parse("2026-12-01T00:00:00Z");
let sqs: SQSClient;
let queueUrl: string;

beforeAll(async () => {
  gateway = await startAwsGateway({
    upstreams: { sqs: process.env.AWS_ENDPOINT_URL_SQS!, dynamodb: process.env.AWS_ENDPOINT_URL_DYNAMODB! },
    region: "us-east-1",
    accountId: "000000000000",
    denials: createDenialLog(),
    now: () => now,
  });
  // A stock client with no endpoint configured: it follows the queue URL, as the SDK does by default.
  const bootstrap = new SQSClient({ endpoint: gateway.endpoint });
  queueUrl = (await bootstrap.send(new CreateQueueCommand({ QueueName: name("quotas") }))).QueueUrl!;
  sqs = new SQSClient({});
});
afterAll(() => gateway?.stop());

const attributes = (n: number) =>
  Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`a${i}`, { DataType: "String", StringValue: "v" }]),
  );
const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: Error) => ({ name: e.name, message: e.message }),
  );

describe("SQS quotas at the gateway", () => {
  it("hands out queue URLs on 127.0.0.1 that a client without an endpoint can use", async () => {
    expect(queueUrl.startsWith(`${gateway.endpoint}/`)).toBe(true);
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "ok" }));
  });

  it("refuses 11 message attributes (SendMessage and each batch entry): InvalidParameterValue", async () => {
    const single = await rejection(
      sqs.send(
        new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "x", MessageAttributes: attributes(11) }),
      ),
    );
    expect(single).toMatchObject({ name: "InvalidParameterValue" });
    expect(single?.message).toMatch(/Number of message attributes \[11\] exceeds the allowed maximum \[10\]/);
    const batch = await rejection(
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: [{ Id: "1", MessageBody: "x", MessageAttributes: attributes(11) }],
        }),
      ),
    );
    expect(batch).toMatchObject({ name: "InvalidParameterValue" });
    await sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "x", MessageAttributes: attributes(10) }),
    );
  });

  it("refuses a delay above 900 s: InvalidParameterValue", async () => {
    const out = await rejection(
      sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "x", DelaySeconds: 901 })),
    );
    expect(out).toMatchObject({ name: "InvalidParameterValue" });
  });

  it("refuses to keep a message invisible past 12 h from its receive (the clock is the test's)", async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "long job" }));
    const [m] =
      (
        await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, VisibilityTimeout: 600 }),
        )
      ).Messages ?? [];
    // 11 h 59 min later, within the limit by 60 s.
    now += (43_200 - 60) * 1000;
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: m!.ReceiptHandle!,
        VisibilityTimeout: 30,
      }),
    );
    const over = await rejection(
      sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: m!.ReceiptHandle!,
          VisibilityTimeout: 120,
        }),
      ),
    );
    expect(over).toMatchObject({ name: "InvalidParameterValue" });
    expect(over?.message).toMatch(
      /Total VisibilityTimeout for the message is beyond the limit \[43200 seconds\]/,
    );
    // The batch form fails that entry alone.
    const batch = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: [{ Id: "late", ReceiptHandle: m!.ReceiptHandle!, VisibilityTimeout: 120 }],
      }),
    );
    expect(batch.Failed?.map((f) => [f.Id, f.Code])).toEqual([["late", "InvalidParameterValue"]]);
  });
});

describe("issue 34 item 3: FIFO ids SQS refuses, refused at the gateway (fauxqs stores any string)", () => {
  const reason = (parameter: string) =>
    new RegExp(
      `for parameter ${parameter} is invalid\\. Reason: ${parameter} can only include alphanumeric and punctuation characters\\. 1 to 128 in length\\.`,
    );

  it("SendMessage: a group id with a space or a letter outside ASCII, or over 128 characters, and such a dedup id", async () => {
    const bootstrap = new SQSClient({ endpoint: gateway.endpoint });
    const fifo = (
      await bootstrap.send(
        new CreateQueueCommand({ QueueName: name("ids.fifo"), Attributes: { FifoQueue: "true" } }),
      )
    ).QueueUrl!;
    const send = (group: string, dedup = "d1") =>
      rejection(
        sqs.send(
          new SendMessageCommand({
            QueueUrl: fifo,
            MessageBody: "x",
            MessageGroupId: group,
            MessageDeduplicationId: dedup,
          }),
        ),
      );
    for (const group of ["José García", "a".repeat(129)]) {
      const out = await send(group);
      expect(out).toMatchObject({ name: "InvalidParameterValue" });
      expect(out?.message).toMatch(reason("MessageGroupId"));
    }
    expect((await send("g", "no spaces please"))?.message).toMatch(reason("MessageDeduplicationId"));
    // Every printable ASCII character but the space, up to 128 of them, is accepted.
    const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_\u0060{|}~"; // \u0060 is the backtick
    expect(punctuation).toHaveLength(32);
    expect(await send(punctuation + "a".repeat(96), "ok-1")).toBeUndefined();
    bootstrap.destroy();
  });

  it("SendMessageBatch: the refused entry fails alone, with SenderFault and InvalidParameterValue; the others are sent", async () => {
    const bootstrap = new SQSClient({ endpoint: gateway.endpoint });
    const fifo = (
      await bootstrap.send(
        new CreateQueueCommand({ QueueName: name("batch-ids.fifo"), Attributes: { FifoQueue: "true" } }),
      )
    ).QueueUrl!;
    const out = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: fifo,
        Entries: [
          { Id: "ok", MessageBody: "1", MessageGroupId: "g", MessageDeduplicationId: "1" },
          { Id: "bad", MessageBody: "2", MessageGroupId: "José García", MessageDeduplicationId: "2" },
        ],
      }),
    );
    expect(out.Successful?.map((s) => s.Id)).toEqual(["ok"]);
    expect(out.Failed?.map((f) => [f.Id, f.SenderFault, f.Code])).toEqual([
      ["bad", true, "InvalidParameterValue"],
    ]);
    expect(out.Failed?.[0]?.Message).toMatch(reason("MessageGroupId"));
    const all = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: fifo,
        Entries: [
          { Id: "only", MessageBody: "3", MessageGroupId: "a".repeat(200), MessageDeduplicationId: "3" },
        ],
      }),
    );
    expect(all.Successful ?? []).toEqual([]);
    expect(all.Failed?.map((f) => f.Id)).toEqual(["only"]);
    bootstrap.destroy();
  });
});

describe("the limits the emulators enforce themselves hold through the gateway, in AWS's words", () => {
  it("SQS: 11 batch entries, a message over 1 MiB, a batch over 1 MiB", async () => {
    const entries = (n: number, size = 1) =>
      Array.from({ length: n }, (_, i) => ({ Id: String(i), MessageBody: "x".repeat(size) }));
    expect(
      await rejection(sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(11) }))),
    ).toMatchObject({ name: "TooManyEntriesInBatchRequest" });
    expect(
      await rejection(
        sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "x".repeat(1_048_577) })),
      ),
    ).toMatchObject({ name: expect.stringMatching(/InvalidParameterValue$/) });
    expect(
      await rejection(
        sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(4, 300_000) })),
      ),
    ).toMatchObject({ name: "BatchRequestTooLong" });
  });

  it("DynamoDB: an item over 400 KB, TransactWriteItems over 100 items, BatchWriteItem and BatchExecuteStatement over 25", async () => {
    const ddb = new DynamoDBClient({ endpoint: gateway.endpoint });
    const table = name("limits");
    await createDedupTable(ddb, table);
    const item = (i: number, size = 1) => ({ pk: { S: `k${i}` }, v: { S: "x".repeat(size) } });
    const validation = { name: "ValidationException" };
    expect(
      await rejection(ddb.send(new PutItemCommand({ TableName: table, Item: item(0, 410_000) }))),
    ).toMatchObject(validation);
    expect(
      await rejection(
        ddb.send(
          new TransactWriteItemsCommand({
            TransactItems: Array.from({ length: 101 }, (_, i) => ({
              Put: { TableName: table, Item: item(i) },
            })),
          }),
        ),
      ),
    ).toMatchObject(validation);
    expect(
      await rejection(
        ddb.send(
          new BatchWriteItemCommand({
            RequestItems: {
              [table]: Array.from({ length: 26 }, (_, i) => ({ PutRequest: { Item: item(i) } })),
            },
          }),
        ),
      ),
    ).toMatchObject(validation);
    expect(
      await rejection(
        ddb.send(
          new BatchExecuteStatementCommand({
            Statements: Array.from({ length: 26 }, (_, i) => ({
              Statement: `INSERT INTO "${table}" VALUE {'pk': ?}`,
              Parameters: [{ S: `b${i}` }],
            })),
          }),
        ),
      ),
    ).toMatchObject(validation);
    ddb.destroy();
  });
});
