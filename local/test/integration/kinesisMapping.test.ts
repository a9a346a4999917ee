/**
 * Issue 38 item 3: the Kinesis event source mapping of the local runtime, on kinesis-local, as
 * Lambda documents it. A CDK app with streams, plain JS handlers and `KinesisEventSource` mappings
 * runs with its triggers held until every record is in the streams (and one stream is split), so
 * each check counts what was delivered, never how long it took:
 * - every record is delivered once and in order per partition key, across two shards;
 * - a partial batch response makes the batch resume at the lowest failed sequence number;
 * - a record that always crashes the function is bisected out and, after the retry limit, its
 *   batch info (KinesisBatchInfo) lands on the on-failure destination; every other record is done;
 * - records older than MaximumRecordAgeInSeconds (a clock the test moves) go to the destination
 *   without an invocation;
 * - ParallelizationFactor keeps each key's order;
 * - a split shard's parent is drained before its children, so a key's order holds across them;
 * - a role without kinesis:GetRecords: its mapping is refused as Lambda refuses it, and its own
 *   GetRecords is denied with AccessDeniedException.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
  ListShardsCommand,
  PutRecordCommand,
  PutRecordsCommand,
  SplitShardCommand,
} from "@aws-sdk/client-kinesis";
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { App, Duration, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kinesis from "aws-cdk-lib/aws-kinesis";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { KinesisEventSource, SqsDlq } from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { KinesisStreamEvent, KinesisStreamRecord } from "aws-lambda";
import { type LocalRuntime, startLocalRuntime } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { names } from "../../../test/support/names.ts";
import { consoleClients } from "../../src/console/consoleSources.ts";
import { consoleKinesis } from "../../src/services/kinesis/consoleKinesis.ts";

const name = names(import.meta.url);
const outdir = mkdtempSync(join(tmpdir(), "kinesis-mapping-cdk-"));
/** The clock the mappings read record ages by: an hour ahead, so the Aged mapping's records are old. */
const AHEAD_MS = 3_600_000;

/**
 * One handler for every function: a record `{ crash: true }` throws, a record `{ failOnce: true }`
 * is reported as a batch item failure the first time it is seen.
 */
const HANDLER = `
const failed = new Set();
exports.handler = async (event) => {
  const batchItemFailures = [];
  for (const r of event.Records) {
    const body = JSON.parse(Buffer.from(r.kinesis.data, "base64").toString("utf8"));
    if (body.crash) throw new Error("poison record " + body.n);
    if (body.failOnce && !failed.has(r.kinesis.sequenceNumber)) {
      failed.add(r.kinesis.sequenceNumber);
      batchItemFailures.push({ itemIdentifier: r.kinesis.sequenceNumber });
    }
  }
  return { batchItemFailures };
};`;

function synthApp(): string {
  const app = new App({ outdir, context: { "aws:cdk:enable-path-metadata": true } });
  const stack = new Stack(app, "KinesisMapping");
  const fn = (id: string, role?: iam.IRole) =>
    new lambda.Function(stack, id, {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: "index.handler",
      code: lambda.Code.fromInline(HANDLER),
      timeout: Duration.seconds(30),
      ...(role ? { role } : {}),
    });
  const stream = (id: string, shardCount: number) =>
    new kinesis.Stream(stack, id, { streamName: name(id), shardCount });
  const dlq = new sqs.Queue(stack, "Dlq", { queueName: name("dlq") });
  const agedDlq = new sqs.Queue(stack, "AgedDlq", { queueName: name("aged-dlq") });
  const trigger = (
    id: string,
    s: kinesis.IStream,
    options: Partial<ConstructorParameters<typeof KinesisEventSource>[1]> = {},
  ) =>
    fn(id).addEventSource(
      new KinesisEventSource(s, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: 10,
        reportBatchItemFailures: true,
        ...options,
      }),
    );
  const ordered = stream("Ordered", 2);
  trigger("OrderedFn", ordered);
  trigger("PartialFn", stream("Partial", 1));
  trigger("PoisonFn", stream("Poison", 1), {
    bisectBatchOnError: true,
    retryAttempts: 1,
    onFailure: new SqsDlq(dlq),
  });
  trigger("AgedFn", stream("Aged", 1), {
    maxRecordAge: Duration.seconds(60),
    onFailure: new SqsDlq(agedDlq),
  });
  trigger("KeyedFn", stream("Keyed", 1), { parallelizationFactor: 4, batchSize: 5 });
  trigger("ReshardFn", stream("Resharded", 1));
  // Wired by hand to a role that may find a shard but not read it.
  const noRead = new iam.Role(stack, "NoReadRole", {
    assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
  });
  noRead.addToPolicy(
    new iam.PolicyStatement({
      actions: [
        "kinesis:DescribeStream",
        "kinesis:DescribeStreamSummary",
        "kinesis:GetShardIterator",
        "kinesis:ListShards",
      ],
      resources: [ordered.streamArn],
    }),
  );
  new lambda.CfnEventSourceMapping(stack, "NoReadMapping", {
    functionName: fn("NoRead", noRead).functionName,
    eventSourceArn: ordered.streamArn,
    startingPosition: "TRIM_HORIZON",
  });
  // Wired by hand to a role that may read the stream but not send to the on-failure destination.
  const noSend = new iam.Role(stack, "NoSendRole", {
    assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
  });
  ordered.grantRead(noSend);
  new lambda.CfnEventSourceMapping(stack, "NoSendMapping", {
    functionName: fn("NoSend", noSend).functionName,
    eventSourceArn: ordered.streamArn,
    startingPosition: "TRIM_HORIZON",
    destinationConfig: { onFailure: { destination: dlq.queueArn } },
  });
  return app.synth().directory;
}

interface Delivery {
  readonly fn: string;
  readonly ok: boolean;
  readonly records: ReadonlyArray<{ key: string; n: number; seq: string; shard: string }>;
  readonly failures: readonly string[];
}

let runtime: LocalRuntime;
const kinesisClient = new KinesisClient({});
let sqsClient: SQSClient;
const deliveries: Delivery[] = [];
const rawRecords: Array<{ fn: string; record: KinesisStreamRecord }> = [];
const sequences = new Map<string, string>(); // `${stream}/${key}/${n}` → sequence number

const put = async (stream: string, records: Array<{ key: string; n: number; [k: string]: unknown }>) => {
  // One PutRecords per stream keeps each key's records in put order (PutRecords keeps a shard's order).
  const out = await kinesisClient.send(
    new PutRecordsCommand({
      StreamName: name(stream),
      Records: records.map((r) => ({ PartitionKey: r.key, Data: Buffer.from(JSON.stringify(r)) })),
    }),
  );
  for (const [i, r] of (out.Records ?? []).entries())
    sequences.set(`${stream}/${records[i]!.key}/${records[i]!.n}`, r.SequenceNumber!);
};

const of = (fnId: string) => {
  const fnName = runtime.findFunction(fnId).name;
  return deliveries.filter((d) => d.fn === fnName);
};

async function until(what: string, done: () => boolean | Promise<boolean>, limitMs = 60_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const succeededOf = (fnId: string) => of(fnId).filter((d) => d.ok);

/** Each key's n in the order the function finished them (successful invocations, less the reported failures). */
function doneOrder(fnId: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const d of succeededOf(fnId)) {
    const failedFrom = d.failures.length
      ? Math.min(...d.failures.map((f) => d.records.findIndex((r) => r.seq === f)))
      : d.records.length;
    for (const r of d.records.slice(0, failedFrom)) out.set(r.key, [...(out.get(r.key) ?? []), r.n]);
  }
  return out;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

async function receiveAll(queueLogicalId: string, expected: number): Promise<Array<Record<string, unknown>>> {
  const url = runtime.app.queues.find((q) => q.logicalId.startsWith(queueLogicalId))!.url;
  const got: Array<Record<string, unknown>> = [];
  await until(`${expected} destination records`, async () => {
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
    return got.length >= expected;
  });
  return got;
}

beforeAll(async () => {
  runtime = await startLocalRuntime({
    cdkOut: synthApp(),
    startTriggers: false,
    mappingClock: () => Date.now() + AHEAD_MS,
  });
  // Queue URLs name the gateway.
  sqsClient = new SQSClient({ endpoint: runtime.enforcement.gateway.endpoint });
  runtime.host.observeInvocations((fn, event, result) => {
    const records = (event as KinesisStreamEvent).Records ?? [];
    if (records[0]) rawRecords.push({ fn: fn.name, record: records[0] });
    deliveries.push({
      fn: fn.name,
      ok: result.ok,
      records: records.map((r) => {
        const body = JSON.parse(Buffer.from(r.kinesis.data, "base64").toString("utf8")) as {
          key: string;
          n: number;
        };
        return { key: body.key, n: body.n, seq: r.kinesis.sequenceNumber, shard: r.eventID.split(":")[0]! };
      }),
      failures: result.ok
        ? (
            (result.value as { batchItemFailures?: Array<{ itemIdentifier: string }> })?.batchItemFailures ??
            []
          ).map((f) => f.itemIdentifier)
        : [],
    });
  });
  // Everything is in the streams before a mapping starts.
  await put(
    "Ordered",
    range(40).map((i) => ({ key: `k${i % 4}`, n: Math.floor(i / 4) })),
  );
  await put(
    "Partial",
    range(10).map((n) => ({ key: "p", n, ...(n === 5 ? { failOnce: true } : {}) })),
  );
  await put(
    "Poison",
    range(8).map((n) => ({ key: "x", n, ...(n === 3 ? { crash: true } : {}) })),
  );
  await put(
    "Aged",
    range(3).map((n) => ({ key: "a", n })),
  );
  await put(
    "Keyed",
    range(80).map((i) => ({ key: `k${i % 8}`, n: Math.floor(i / 8) })),
  );
  await put(
    "Resharded",
    range(10).map((n) => ({ key: "r", n })),
  );
  const [parent] = (await kinesisClient.send(new ListShardsCommand({ StreamName: name("Resharded") })))
    .Shards!;
  await kinesisClient.send(
    new SplitShardCommand({
      StreamName: name("Resharded"),
      ShardToSplit: parent!.ShardId!,
      NewStartingHashKey: "85070591730234615865843651857942052864",
    }),
  );
  await until("the split to finish", async () => {
    const shards = (await kinesisClient.send(new ListShardsCommand({ StreamName: name("Resharded") })))
      .Shards!;
    return shards.length === 3;
  });
  for (const n of range(10).map((i) => i + 10))
    await kinesisClient.send(
      new PutRecordCommand({
        StreamName: name("Resharded"),
        PartitionKey: "r",
        Data: Buffer.from(JSON.stringify({ key: "r", n })),
      }),
    );
  await Promise.all(runtime.eventSources.map((s) => s.start()));
}, 180_000);

afterAll(async () => {
  await runtime?.stop();
  kinesisClient.destroy();
  sqsClient.destroy();
  rmSync(outdir, { recursive: true, force: true });
});

describe("the Kinesis event source mapping of the local runtime", () => {
  it("delivers every record once, in order per partition key, across two shards, in Lambda's event shape", async () => {
    await until("40 records", () => succeededOf("OrderedFn").reduce((n, d) => n + d.records.length, 0) >= 40);
    const order = doneOrder("OrderedFn");
    for (const key of ["k0", "k1", "k2", "k3"]) expect(order.get(key)).toEqual(range(10));
    expect(new Set(succeededOf("OrderedFn").flatMap((d) => d.records.map((r) => r.shard))).size).toBe(2);
    // Lambda's Kinesis record ("Using Lambda with Kinesis Data Streams", sample event).
    const fn = runtime.findFunction("OrderedFn");
    const { record } = rawRecords.find((r) => r.fn === fn.name)!;
    const streamArn = runtime.app.streams.find((s) => s.name === name("Ordered"))!.arn;
    const roleArn = runtime.app.access.principals.find((p) => p.functionName === fn.name)!.roleArn;
    expect(record).toEqual({
      kinesis: {
        kinesisSchemaVersion: "1.0",
        partitionKey: expect.stringMatching(/^k[0-3]$/),
        sequenceNumber: expect.stringMatching(/^\d+$/),
        data: expect.any(String),
        approximateArrivalTimestamp: expect.any(Number),
      },
      eventSource: "aws:kinesis",
      eventVersion: "1.0",
      eventID: `${record.eventID.split(":")[0]}:${record.kinesis.sequenceNumber}`,
      eventName: "aws:kinesis:record",
      invokeIdentityArn: roleArn,
      awsRegion: "us-east-1",
      eventSourceARN: streamArn,
    });
    expect(record.eventID).toMatch(/^shardId-\d{12}:\d+$/);
    // Seconds, with the milliseconds as the fraction.
    expect(record.kinesis.approximateArrivalTimestamp).toBeLessThan(Date.now() / 1000 + 1);
    expect(record.kinesis.approximateArrivalTimestamp).toBeGreaterThan(Date.now() / 1000 - 3600);
  });

  it("resumes a partial batch at the lowest failed sequence number", async () => {
    await until("the retried batch", () => of("PartialFn").length >= 2);
    const [first, second] = of("PartialFn");
    expect(first!.records.map((r) => r.n)).toEqual(range(10));
    expect(first!.failures).toEqual([sequences.get("Partial/p/5")]);
    // Lambda resends from the failed record on: 5..9, never 0..4.
    expect(second!.records.map((r) => r.n)).toEqual([5, 6, 7, 8, 9]);
    expect(second!.failures).toEqual([]);
  });

  it("bisects a crashing record out and sends its batch info to the destination after the retry limit", async () => {
    const [record] = await receiveAll("Dlq", 1);
    const seq = sequences.get("Poison/x/3");
    expect(record).toMatchObject({
      requestContext: {
        condition: "RetryAttemptsExhausted",
        functionArn: runtime.findFunction("PoisonFn").arn,
      },
      responseContext: { functionError: "Unhandled" },
      version: "1.0",
      KinesisBatchInfo: {
        shardId: "shardId-000000000000",
        startSequenceNumber: seq,
        endSequenceNumber: seq,
        batchSize: 1,
        streamArn: runtime.app.streams.find((s) => s.name === name("Poison"))!.arn,
      },
    });
    const info = record!.KinesisBatchInfo as Record<string, string>;
    expect(new Date(info.approximateArrivalOfFirstRecord!).toISOString()).toBe(
      info.approximateArrivalOfFirstRecord,
    );
    // Every other record ran to success once the poison was out; the poison never succeeded.
    expect(doneOrder("PoisonFn").get("x")).toEqual([0, 1, 2, 4, 5, 6, 7]);
    // The single poison record was invoked twice: once, then one retry (MaximumRetryAttempts 1).
    expect(of("PoisonFn").filter((d) => d.records.length === 1 && d.records[0]!.n === 3)).toHaveLength(2);
  });

  it("sends records older than MaximumRecordAgeInSeconds to the destination without invoking the function", async () => {
    const [record] = await receiveAll("AgedDlq", 1);
    expect(record).toMatchObject({
      requestContext: { condition: "RecordAgeExceeded", approximateInvokeCount: 0 },
      KinesisBatchInfo: {
        batchSize: 3,
        startSequenceNumber: sequences.get("Aged/a/0"),
        endSequenceNumber: sequences.get("Aged/a/2"),
      },
    });
    expect(of("AgedFn")).toEqual([]);
  });

  it("keeps each key's order with ParallelizationFactor 4", async () => {
    await until("80 records", () => succeededOf("KeyedFn").reduce((n, d) => n + d.records.length, 0) >= 80);
    const order = doneOrder("KeyedFn");
    for (const key of range(8).map((k) => `k${k}`)) expect(order.get(key)).toEqual(range(10));
    // Batches are per lane: no batch of five holds five different keys, as one lane would have them.
    expect(of("KeyedFn").every((d) => new Set(d.records.map((r) => r.key)).size < 5)).toBe(true);
  });

  it("drains a split shard's parent before its children, so a key's order holds across the reshard", async () => {
    await until("20 records", () => succeededOf("ReshardFn").reduce((n, d) => n + d.records.length, 0) >= 20);
    expect(doneOrder("ReshardFn").get("r")).toEqual(range(20));
    const shards = succeededOf("ReshardFn").flatMap((d) => d.records.map((r) => r.shard));
    expect(shards.slice(0, 10)).toEqual(Array(10).fill("shardId-000000000000"));
    expect(shards.slice(10).every((s) => s !== "shardId-000000000000")).toBe(true);
  });

  it("shows streams, shards, each mapping's position and what it gave up on in the console's Kinesis view", async () => {
    await until("the poison's batch info", () => of("PoisonFn").filter((d) => !d.ok).length >= 2);
    await until("the resharded stream read", () => succeededOf("ReshardFn").length > 0);
    const sources = {
      app: runtime.app,
      eventSources: runtime.eventSources,
      emulatorEnv: { AWS_ENDPOINT_URL_KINESIS: process.env.AWS_ENDPOINT_URL_KINESIS! },
    };
    const clients = consoleClients(sources);
    try {
      const streams = await consoleKinesis(sources, clients).streams();
      const resharded = streams.find((s) => s.name === name("Resharded"))!;
      expect(resharded.shards.map((s) => [s.shardId, s.open, s.parentIds])).toEqual([
        ["shardId-000000000000", false, []],
        ["shardId-000000000001", true, ["shardId-000000000000"]],
        ["shardId-000000000002", true, ["shardId-000000000000"]],
      ]);
      await until("the poison stream done", () => doneOrder("PoisonFn").get("x")?.length === 7);
      const [poison] = (await consoleKinesis(sources, clients).streams()).find(
        (s) => s.name === name("Poison"),
      )!.mappings;
      expect(poison).toMatchObject({
        functionName: runtime.findFunction("PoisonFn").name,
        discarded: 1,
        destinationQueue: name("dlq"),
        positions: [
          {
            shardId: "shardId-000000000000",
            lastRead: sequences.get("Poison/x/7"),
            lastDone: sequences.get("Poison/x/7"),
            buffered: 0,
          },
        ],
      });
      expect(poison!.positions[0]!.iteratorAgeMs).toBeGreaterThanOrEqual(0);
    } finally {
      await clients.destroy();
    }
  });

  it("refuses the mapping of a role without kinesis:GetRecords, and denies its GetRecords with AccessDeniedException", async () => {
    const refused = runtime.app.report.refused.find((r) => r.logicalId.startsWith("NoReadMapping"));
    expect(refused?.detail).toBe(
      "InvalidParameterValueException: The function execution role does not have permissions to call GetRecords on Kinesis",
    );
    const fnName = runtime.findFunction("NoRead").name;
    const streamArn = runtime.app.streams.find((s) => s.name === name("Ordered"))!.arn;
    expect(
      runtime.denials
        .all()
        .filter((d) => d.functionName === fnName)
        .map((d) => `${d.action} on ${d.resource}`),
    ).toEqual([`kinesis:GetRecords on ${streamArn}`]);
    // A role that may read the stream but not send to its on-failure destination.
    expect(runtime.app.report.refused.find((r) => r.logicalId.startsWith("NoSendMapping"))?.detail).toBe(
      "InvalidParameterValueException: The provided execution role does not have permissions to call SendMessage on SQS",
    );
    // Its own calls, through the gateway the functions use (HTTP/2, as the SDK's Kinesis client speaks).
    const asRole = new KinesisClient({
      endpoint: runtime.enforcement.gateway.functionEndpoint,
      credentials: runtime.enforcement.credentials(fnName)!,
    });
    try {
      const { ShardIterator } = await asRole.send(
        new GetShardIteratorCommand({
          StreamARN: streamArn,
          ShardId: "shardId-000000000000",
          ShardIteratorType: "TRIM_HORIZON",
        }),
      );
      const denied = await asRole.send(new GetRecordsCommand({ ShardIterator })).catch((e: Error) => e);
      expect((denied as Error).name).toBe("AccessDeniedException");
      expect((denied as Error).message).toContain("kinesis:GetRecords");
    } finally {
      asRole.destroy();
    }
  });
});
