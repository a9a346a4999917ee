/**
 * Issue 38 item 3: a DynamoDB Streams mapping of a user's own function (not the outbox relay) runs
 * as Lambda documents it, through the same mapping as the relay's: the event in Lambda's shape, a
 * partial batch response resuming at the lowest failed SequenceNumber, and a record that always
 * crashes the function bisected out and reported on the on-failure destination as
 * DDBStreamBatchInfo after the retry limit. The triggers are held until every item is written, so
 * each check counts what was delivered.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { App, Duration, Stack } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { DynamoEventSource, SqsDlq } from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { type LocalRuntime, startLocalRuntime } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { names } from "../../../test/support/names.ts";

const name = names(import.meta.url);
const outdir = mkdtempSync(join(tmpdir(), "ddb-stream-mapping-cdk-"));

/** An item `{ crash: true }` throws; an item `{ failOnce: true }` is reported failed the first time. */
const HANDLER = `
const failed = new Set();
exports.handler = async (event) => {
  const batchItemFailures = [];
  for (const r of event.Records) {
    const image = r.dynamodb.NewImage || {};
    if (image.crash) throw new Error("poison item " + image.n.N);
    if (image.failOnce && !failed.has(r.dynamodb.SequenceNumber)) {
      failed.add(r.dynamodb.SequenceNumber);
      batchItemFailures.push({ itemIdentifier: r.dynamodb.SequenceNumber });
    }
  }
  return { batchItemFailures };
};`;

function synthApp(): string {
  const app = new App({ outdir, context: { "aws:cdk:enable-path-metadata": true } });
  const stack = new Stack(app, "DdbStreamMapping");
  const dlq = new sqs.Queue(stack, "Dlq", { queueName: name("dlq") });
  const trigger = (id: string, options: Partial<ConstructorParameters<typeof DynamoEventSource>[1]> = {}) => {
    const table = new dynamodb.Table(stack, `${id}Table`, {
      tableName: name(id),
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      sortKey: { name: "n", type: dynamodb.AttributeType.NUMBER },
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    });
    new lambda.Function(stack, `${id}Fn`, {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: "index.handler",
      code: lambda.Code.fromInline(HANDLER),
      timeout: Duration.seconds(30),
    }).addEventSource(
      new DynamoEventSource(table, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: 10,
        reportBatchItemFailures: true,
        ...options,
      }),
    );
  };
  trigger("Partial");
  trigger("Poison", { bisectBatchOnError: true, retryAttempts: 1, onFailure: new SqsDlq(dlq) });
  return app.synth().directory;
}

interface Delivery {
  readonly fn: string;
  readonly ok: boolean;
  readonly records: readonly DynamoDBRecord[];
  readonly failures: readonly string[];
}

let runtime: LocalRuntime;
let sqsClient: SQSClient;
const ddb = new DynamoDBClient({});
const deliveries: Delivery[] = [];

const nOf = (r: DynamoDBRecord) => Number(r.dynamodb?.NewImage?.n?.N);
const of = (fnId: string) => deliveries.filter((d) => d.fn === runtime.findFunction(fnId).name);

async function until(what: string, done: () => boolean | Promise<boolean>, limitMs = 60_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function write(
  table: string,
  count: number,
  extra: (n: number) => Record<string, { BOOL: boolean } | undefined>,
) {
  for (let n = 0; n < count; n++)
    await ddb.send(
      new PutItemCommand({
        TableName: name(table),
        Item: { pk: { S: "p" }, n: { N: String(n) }, ...extra(n) },
      }),
    );
}

beforeAll(async () => {
  runtime = await startLocalRuntime({ cdkOut: synthApp(), startTriggers: false });
  sqsClient = new SQSClient({ endpoint: runtime.enforcement.gateway.endpoint });
  runtime.host.observeInvocations((fn, event, result) => {
    deliveries.push({
      fn: fn.name,
      ok: result.ok,
      records: (event as DynamoDBStreamEvent).Records ?? [],
      failures: result.ok
        ? (
            (result.value as { batchItemFailures?: Array<{ itemIdentifier: string }> })?.batchItemFailures ??
            []
          ).map((f) => f.itemIdentifier)
        : [],
    });
  });
  await write("Partial", 10, (n) => (n === 5 ? { failOnce: { BOOL: true } } : {}));
  await write("Poison", 8, (n) => (n === 3 ? { crash: { BOOL: true } } : {}));
  await Promise.all(runtime.eventSources.map((s) => s.start()));
}, 180_000);

afterAll(async () => {
  await runtime?.stop();
  ddb.destroy();
  sqsClient?.destroy();
  rmSync(outdir, { recursive: true, force: true });
});

describe("a DynamoDB Streams mapping of a user's function", () => {
  it("hands the function Lambda's DynamoDB Streams records and resumes a partial batch at the lowest failed SequenceNumber", async () => {
    await until("the retried batch", () => of("PartialFn").length >= 2);
    const [first, second] = of("PartialFn");
    expect(first!.records.map(nOf)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const failedSeq = first!.records[5]!.dynamodb!.SequenceNumber;
    expect(first!.failures).toEqual([failedSeq]);
    expect(second!.records.map(nOf)).toEqual([5, 6, 7, 8, 9]);
    expect(second!.failures).toEqual([]);
    const table = runtime.app.tables.find((t) => t.name === name("Partial"))!;
    expect(first!.records[0]).toEqual({
      eventID: expect.any(String),
      eventName: "INSERT",
      eventVersion: "1.1",
      eventSource: "aws:dynamodb",
      awsRegion: "us-east-1",
      eventSourceARN: table.streamArn,
      dynamodb: {
        ApproximateCreationDateTime: expect.any(Number),
        Keys: { pk: { S: "p" }, n: { N: "0" } },
        NewImage: { pk: { S: "p" }, n: { N: "0" } },
        SequenceNumber: expect.stringMatching(/^\d+$/),
        SizeBytes: expect.any(Number),
        StreamViewType: "NEW_AND_OLD_IMAGES",
      },
    });
  });

  it("bisects a crashing record out and sends DDBStreamBatchInfo to the destination after the retry limit", async () => {
    const url = runtime.app.queues.find((q) => q.logicalId.startsWith("Dlq"))!.url;
    const got: Array<Record<string, unknown>> = [];
    await until("the destination record", async () => {
      const out = await sqsClient.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      for (const m of out.Messages ?? []) got.push(JSON.parse(m.Body!) as Record<string, unknown>);
      if (out.Messages?.length)
        await sqsClient.send(
          new DeleteMessageBatchCommand({
            QueueUrl: url,
            Entries: out.Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
          }),
        );
      return got.length >= 1;
    });
    const poison = of("PoisonFn")
      .flatMap((d) => d.records)
      .find((r) => nOf(r) === 3)!;
    const table = runtime.app.tables.find((t) => t.name === name("Poison"))!;
    expect(got[0]).toMatchObject({
      requestContext: {
        condition: "RetryAttemptsExhausted",
        functionArn: runtime.findFunction("PoisonFn").arn,
      },
      responseContext: { functionError: "Unhandled" },
      DDBStreamBatchInfo: {
        startSequenceNumber: poison.dynamodb!.SequenceNumber,
        endSequenceNumber: poison.dynamodb!.SequenceNumber,
        batchSize: 1,
        streamArn: table.streamArn,
      },
    });
    // Every other item ran to success; the poison never did.
    const done = of("PoisonFn")
      .filter((d) => d.ok)
      .flatMap((d) => d.records.map(nOf));
    expect(done).toEqual([0, 1, 2, 4, 5, 6, 7]);
  });
});
