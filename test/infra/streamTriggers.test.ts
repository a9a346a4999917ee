/**
 * Issue 38 item 2: Kinesis and DynamoDB Streams triggers on a consumer, the Kinesis stream
 * construct, their grants (exactly what the mapping and the consumer's parking need) and the
 * stream rules, checked on the synthesized template.
 */
import { Duration, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as kinesis from "aws-cdk-lib/aws-kinesis";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { DynamoEventSource, KinesisEventSource, SqsDlq } from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import {
  ConsumerFunction,
  DedupTable,
  DynamoDbStreamTrigger,
  KinesisStream,
  LAMBDA_ENV,
  QueueWithDlq,
} from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";
import { STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { ruleCodeOf, testApp } from "./synthHelpers.ts";

const STREAM_ARN = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders";
const TABLE_STREAM_ARN =
  "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000";

const consumer = (stack: Stack, id = "C") =>
  new ConsumerFunction(stack, id, { entry: STUB_ENTRY, timeout: Duration.seconds(30) });

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
const asList = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);

/** Every statement of the policies attached to the consumer's role. */
function statementsOf(t: Template): Statement[] {
  return Object.values(t.findResources("AWS::IAM::Policy")).flatMap(
    (p) =>
      (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
        .Statement,
  );
}

/** Each action the role is allowed, with the resources (JSON) it is allowed on. */
function grants(t: Template): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const s of statementsOf(t)) {
    for (const a of asList(s.Action)) {
      const list = out.get(a) ?? [];
      list.push(...asList(s.Resource).map((r) => JSON.stringify(r)));
      out.set(a, list);
    }
  }
  return out;
}

const warningsOf = (stack: Stack) =>
  Annotations.fromStack(stack)
    .findWarning("*", Match.anyValue())
    .map((w) => String(w.entry.data));

const LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"];
const SEND_ACTIONS = ["sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"];

describe("KinesisStream", () => {
  it("is on-demand, encrypted with the AWS-managed key and keeps records 24 h by default", () => {
    const stack = new Stack(testApp(), "S");
    new KinesisStream(stack, "Orders");
    Template.fromStack(stack).hasResourceProperties("AWS::Kinesis::Stream", {
      StreamModeDetails: { StreamMode: "ON_DEMAND" },
      StreamEncryption: { EncryptionType: "KMS", KeyId: "alias/aws/kinesis" },
      RetentionPeriodHours: 24,
      ShardCount: Match.absent(),
    });
  });

  it("takes a shard count (provisioned), a retention and a customer-managed key", () => {
    const stack = new Stack(testApp(), "S");
    const key = new kms.Key(stack, "Key");
    new KinesisStream(stack, "Orders", {
      shardCount: 4,
      retentionPeriod: Duration.days(7),
      encryptionKey: key,
    });
    Template.fromStack(stack).hasResourceProperties("AWS::Kinesis::Stream", {
      StreamModeDetails: { StreamMode: "PROVISIONED" },
      ShardCount: 4,
      RetentionPeriodHours: 168,
      StreamEncryption: {
        EncryptionType: "KMS",
        KeyId: Match.objectLike({ "Fn::GetAtt": Match.anyValue() }),
      },
    });
  });

  it("grantWrite gives a producer PutRecord(s) and encrypt on the customer key", () => {
    const stack = new Stack(testApp(), "S");
    const key = new kms.Key(stack, "Key");
    const stream = new KinesisStream(stack, "Orders", { encryptionKey: key });
    stream.grantWrite(consumer(stack).function);
    const g = grants(Template.fromStack(stack));
    expect(g.has("kinesis:PutRecords")).toBe(true);
    expect(g.has("kms:GenerateDataKey*")).toBe(true);
  });
});

describe("addKinesisTrigger", () => {
  it("maps the stream with the library's defaults and a parking queue", () => {
    const stack = new Stack(testApp(), "S");
    const stream = new KinesisStream(stack, "Orders");
    const c = consumer(stack);
    c.addKinesisTrigger(stream);
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^OrdersStream"), "Arn"] },
      StartingPosition: "TRIM_HORIZON",
      BatchSize: 100,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 6 * 3600,
      ParallelizationFactor: 1,
      MetricsConfig: { Metrics: ["EventCount"] },
      DestinationConfig: {
        OnFailure: { Destination: { "Fn::GetAtt": [Match.stringLikeRegexp("^CStreamFailures"), "Arn"] } },
      },
    });
    t.hasResourceProperties("AWS::SQS::Queue", {
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 86_400,
    });
    const env = t.findResources("AWS::Lambda::Function");
    const vars = Object.values(env)[0] as {
      Properties: { Environment: { Variables: Record<string, unknown> } };
    };
    expect(vars.Properties.Environment.Variables[LAMBDA_ENV.dlqUrl]).toEqual({
      Ref: expect.stringMatching(/^CStreamFailures/),
    });
  });

  it("grants exactly the mapping's read actions on the stream and send on the queue, nothing on *", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    c.addKinesisTrigger(new KinesisStream(stack, "Orders"));
    const g = grants(Template.fromStack(stack));
    expect([...g.keys()].sort()).toEqual(
      [
        "kinesis:DescribeStream",
        "kinesis:DescribeStreamSummary",
        "kinesis:GetRecords",
        "kinesis:GetShardIterator",
        "kinesis:ListShards",
        ...SEND_ACTIONS,
        ...LOG_ACTIONS,
      ].sort(),
    );
    for (const a of ["kinesis:GetRecords", "kinesis:ListShards"])
      expect(g.get(a)).toEqual([expect.stringMatching(/OrdersStream.*"Arn"/)]);
    for (const a of SEND_ACTIONS) expect(g.get(a)).toEqual([expect.stringMatching(/CStreamFailures.*"Arn"/)]);
    expect([...g.values()].flat()).not.toContain('"*"');
  });

  it("grants kms:Decrypt on a customer-managed key, and nothing of KMS with the AWS-managed key", () => {
    const stack = new Stack(testApp(), "S");
    const key = new kms.Key(stack, "Key");
    consumer(stack).addKinesisTrigger(new KinesisStream(stack, "Orders", { encryptionKey: key }));
    const g = grants(Template.fromStack(stack));
    expect(g.get("kms:Decrypt")).toEqual([expect.stringMatching(/Key.*"Arn"/)]);
    expect([...g.keys()].filter((a) => a.startsWith("kms:"))).toEqual(["kms:Decrypt"]);

    const plain = new Stack(testApp(), "P");
    consumer(plain).addKinesisTrigger(new KinesisStream(plain, "Orders"));
    expect([...grants(Template.fromStack(plain)).keys()].filter((a) => a.startsWith("kms:"))).toEqual([]);
  });

  it("reads through an enhanced fan-out consumer, granting SubscribeToShard on it", () => {
    const stack = new Stack(testApp(), "S");
    const stream = new KinesisStream(stack, "Orders");
    const fanOut = stream.addConsumer("Fast", { consumerName: "fast" });
    consumer(stack).addKinesisTrigger(stream, { consumer: fanOut });
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::Kinesis::StreamConsumer", { ConsumerName: "fast" });
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^OrdersFast"), "ConsumerARN"] },
    });
    const g = grants(t);
    for (const a of ["kinesis:SubscribeToShard", "kinesis:DescribeStreamConsumer"])
      expect(g.get(a)).toEqual([expect.stringMatching(/OrdersFast.*ConsumerARN/)]);
  });

  it("refuses a fan-out consumer of another stream", () => {
    const stack = new Stack(testApp(), "S");
    const other = kinesis.StreamConsumer.fromStreamConsumerArn(
      stack,
      "Other",
      "arn:aws:kinesis:eu-west-1:123456789012:stream/other/consumer/fast:1700000000",
    );
    const c = consumer(stack);
    const stream = kinesis.Stream.fromStreamArn(stack, "Orders", STREAM_ARN);
    expect(ruleCodeOf(() => c.addKinesisTrigger(stream, { consumer: other }))).toBe(
      "KinesisConsumerOfAnotherStream",
    );
  });

  it("takes an imported stream: grants on its ARN, and warns that its retention is unknown when the age is unbounded", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    c.addKinesisTrigger(kinesis.Stream.fromStreamArn(stack, "Orders", STREAM_ARN), {
      maxRecordAge: "unbounded",
    });
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: STREAM_ARN,
      MaximumRecordAgeInSeconds: Match.absent(),
    });
    expect(grants(t).get("kinesis:GetRecords")).toEqual([JSON.stringify(STREAM_ARN)]);
    expect(warningsOf(stack).some((w) => /retention of S\/Orders is not known at synth/.test(w))).toBe(true);
  });

  it("takes the user's queue as on-failure destination and parking queue", () => {
    const stack = new Stack(testApp(), "S");
    const mine = sqs.Queue.fromQueueArn(stack, "Mine", "arn:aws:sqs:eu-west-1:123456789012:parked");
    consumer(stack).addKinesisTrigger(new KinesisStream(stack, "Orders"), { onFailureQueue: mine });
    const t = Template.fromStack(stack);
    t.resourceCountIs("AWS::SQS::Queue", 0);
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      DestinationConfig: { OnFailure: { Destination: "arn:aws:sqs:eu-west-1:123456789012:parked" } },
    });
    expect(grants(t).get("sqs:SendMessage")).toEqual([
      JSON.stringify("arn:aws:sqs:eu-west-1:123456789012:parked"),
    ]);
  });

  it("shares one parking queue between a consumer's stream triggers, and refuses two different ones", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    c.addKinesisTrigger(new KinesisStream(stack, "A"));
    c.addKinesisTrigger(new KinesisStream(stack, "B"));
    Template.fromStack(stack).resourceCountIs("AWS::SQS::Queue", 1);

    const other = new Stack(testApp(), "O");
    const d = consumer(other);
    d.addKinesisTrigger(new KinesisStream(other, "A"));
    const q = new sqs.Queue(other, "Q");
    expect(ruleCodeOf(() => d.addKinesisTrigger(new KinesisStream(other, "B"), { onFailureQueue: q }))).toBe(
      "StreamParkingQueueConflict",
    );
  });

  it("refuses a stream trigger on a function whose SQS trigger already parks into its DLQ, and the reverse", () => {
    const stack = new Stack(testApp(), "S");
    const queue = new QueueWithDlq(stack, "Jobs", { consumerTimeout: Duration.seconds(30) });
    const c = consumer(stack);
    c.addSqsTrigger(queue);
    expect(ruleCodeOf(() => c.addKinesisTrigger(new KinesisStream(stack, "Orders")))).toBe(
      "StreamParkingQueueConflict",
    );
    const d = consumer(stack, "D");
    d.addKinesisTrigger(new KinesisStream(stack, "Other"));
    expect(ruleCodeOf(() => d.addSqsTrigger(queue))).toBe("StreamParkingQueueConflict");
  });

  it("passes filters through and sets parallelization only when asked, warning about per-shard order", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    c.addKinesisTrigger(new KinesisStream(stack, "Orders"), {
      parallelizationFactor: 4,
      filters: [lambda.FilterCriteria.filter({ data: { kind: lambda.FilterRule.isEqual("order") } })],
    });
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      ParallelizationFactor: 4,
      FilterCriteria: { Filters: [{ Pattern: '{"data":{"kind":["order"]}}' }] },
    });
    const w = warningsOf(stack);
    expect(
      w.some((m) => /parallelizationFactor 4: .*order per partition key .*ordering: "key"/.test(m)),
    ).toBe(true);
    const quiet = new Stack(testApp(), "Q");
    consumer(quiet).addKinesisTrigger(new KinesisStream(quiet, "Orders"));
    expect(warningsOf(quiet)).toEqual([]);
  });
});

describe("addDynamoDbStreamTrigger", () => {
  const tableWithStream = (stack: Stack, key?: kms.IKey) =>
    new dynamodb.Table(stack, "Orders", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      ...(key ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: key } : {}),
    });

  it("maps the table's stream with the library's defaults", () => {
    const stack = new Stack(testApp(), "S");
    consumer(stack).addDynamoDbStreamTrigger(tableWithStream(stack));
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^Orders"), "StreamArn"] },
      StartingPosition: "TRIM_HORIZON",
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 6 * 3600,
      MetricsConfig: { Metrics: ["EventCount"] },
      DestinationConfig: { OnFailure: { Destination: Match.anyValue() } },
    });
  });

  it("grants the four stream actions on the stream ARN only (no Resource *), and decrypt on the table's key", () => {
    const stack = new Stack(testApp(), "S");
    const key = new kms.Key(stack, "Key");
    consumer(stack).addDynamoDbStreamTrigger(tableWithStream(stack, key));
    const g = grants(Template.fromStack(stack));
    expect([...g.keys()].sort()).toEqual(
      [
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
        "kms:Decrypt",
        ...SEND_ACTIONS,
        ...LOG_ACTIONS,
      ].sort(),
    );
    for (const a of ["dynamodb:GetRecords", "dynamodb:ListStreams"])
      expect(g.get(a)).toEqual([expect.stringMatching(/Orders.*"StreamArn"/)]);
    expect([...g.values()].flat()).not.toContain('"*"');
  });

  it("fails synth for a table without a stream, and an imported table without its stream ARN", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    const plain = new dynamodb.Table(stack, "Plain", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
    });
    let error: unknown;
    try {
      c.addDynamoDbStreamTrigger(plain);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "DynamoDbTableWithoutStream", path: "S/C" });
    expect(String(error)).toMatch(/table S\/Plain has no stream to read: give the table a stream/);
    const imported = dynamodb.Table.fromTableName(stack, "Imported", "orders");
    expect(ruleCodeOf(() => c.addDynamoDbStreamTrigger(imported))).toBe("DynamoDbTableWithoutStream");
  });

  it("takes an imported table with its stream ARN, and a TableV2", () => {
    const stack = new Stack(testApp(), "S");
    const imported = dynamodb.Table.fromTableAttributes(stack, "Imported", {
      tableName: "orders",
      tableStreamArn: TABLE_STREAM_ARN,
    });
    consumer(stack).addTrigger(new DynamoDbStreamTrigger(imported));
    const v2 = new dynamodb.TableV2(stack, "V2", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      dynamoStream: dynamodb.StreamViewType.NEW_IMAGE,
    });
    consumer(stack, "D").addDynamoDbStreamTrigger(v2);
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", { EventSourceArn: TABLE_STREAM_ARN });
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^V2"), "StreamArn"] },
    });
  });
});

describe("the stream rules", () => {
  it("refuses unbounded retries with no record age (a crashing record would block its shard)", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    let error: unknown;
    try {
      c.addKinesisTrigger(new KinesisStream(stack, "Orders", { retentionPeriod: Duration.days(7) }), {
        retryAttempts: -1,
        maxRecordAge: "unbounded",
      });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "StreamMappingBlocksShard", path: "S/C" });
    expect(String(error)).toMatch(
      /blocking its shard for up to 7d \(the stream's retention\)\. Give it a finite retryAttempts/,
    );
  });

  it("counts a record age at or above the retention as no bound (the stream trims the record first)", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    const s = new KinesisStream(stack, "Orders");
    expect(
      ruleCodeOf(() => c.addKinesisTrigger(s, { retryAttempts: -1, maxRecordAge: Duration.days(2) })),
    ).toBe("StreamMappingBlocksShard");
    expect(
      ruleCodeOf(() => c.addKinesisTrigger(s, { retryAttempts: -1, maxRecordAge: Duration.hours(23) })),
    ).toBe(undefined);
  });

  it("refuses what Lambda would refuse: batch size, window, retries, record age, parallelization", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    const s = new KinesisStream(stack, "Orders");
    expect(ruleCodeOf(() => c.addKinesisTrigger(s, { batchSize: 10_001 }))).toBe("StreamBatchSizeOutOfRange");
    expect(ruleCodeOf(() => c.addKinesisTrigger(s, { maxBatchingWindow: Duration.seconds(301) }))).toBe(
      "BatchingWindowOutOfRange",
    );
    expect(ruleCodeOf(() => c.addKinesisTrigger(s, { retryAttempts: 10_001 }))).toBe(
      "StreamRetryAttemptsOutOfRange",
    );
    expect(ruleCodeOf(() => c.addKinesisTrigger(s, { maxRecordAge: Duration.seconds(59) }))).toBe(
      "StreamRecordAgeOutOfRange",
    );
    expect(ruleCodeOf(() => c.addKinesisTrigger(s, { parallelizationFactor: 11 }))).toBe(
      "StreamParallelizationOutOfRange",
    );
  });

  it("checks stream mappings added by hand: no destination with bounded retries, no partial responses, no bisect", () => {
    const synthCode = (props: Record<string, unknown>) => {
      const stack = new Stack(testApp(), "S");
      const c = consumer(stack);
      c.function.addEventSource(
        new KinesisEventSource(kinesis.Stream.fromStreamArn(stack, "Orders", STREAM_ARN), {
          startingPosition: lambda.StartingPosition.TRIM_HORIZON,
          ...props,
        }),
      );
      return ruleCodeOf(() => Template.fromStack(stack));
    };
    const dlq = (stack: Stack) => new SqsDlq(new sqs.Queue(stack, "F"));
    expect(synthCode({ retryAttempts: 3, reportBatchItemFailures: true, bisectBatchOnError: true })).toBe(
      "StreamMappingWithoutDestination",
    );
    expect(synthCode({ retryAttempts: 3, bisectBatchOnError: true })).toBe(
      "StreamMappingWithoutPartialBatchResponse",
    );
    expect(synthCode({ reportBatchItemFailures: true, bisectBatchOnError: true })).toBe(
      "StreamMappingBlocksShard",
    );
    const stack = new Stack(testApp(), "N");
    consumer(stack).function.addEventSource(
      new KinesisEventSource(kinesis.Stream.fromStreamArn(stack, "Orders", STREAM_ARN), {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        reportBatchItemFailures: true,
        retryAttempts: 3,
        onFailure: dlq(stack),
      }),
    );
    expect(ruleCodeOf(() => Template.fromStack(stack))).toBe("StreamMappingWithoutBisect");
  });

  it("leaves the outbox relay's stream mapping (made by hand) valid", () => {
    const stack = new Stack(testApp(), "S");
    const table = new dynamodb.Table(stack, "T", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.NEW_IMAGE,
    });
    const c = consumer(stack);
    c.function.addEventSource(
      new DynamoEventSource(table, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        reportBatchItemFailures: true,
        bisectBatchOnError: true,
        retryAttempts: 20,
        onFailure: new SqsDlq(new sqs.Queue(stack, "F")),
      }),
    );
    expect(ruleCodeOf(() => Template.fromStack(stack))).toBeUndefined();
  });

  it("checks the dedup window against the stream's retention (given-up batches are replayable until then), else the record age", () => {
    const path = (options: Parameters<ConsumerFunction["addKinesisTrigger"]>[1], window: Duration) => {
      const stack = new Stack(testApp(), "S");
      const c = consumer(stack);
      new DedupTable(stack, "Dedup", { window }).addConsumer(c);
      c.addKinesisTrigger(new KinesisStream(stack, "Orders", { retentionPeriod: Duration.days(3) }), options);
      return ruleCodeOf(() => Template.fromStack(stack));
    };
    expect(path({}, Duration.hours(7))).toBe("DedupWindowTooShort");
    expect(path({}, Duration.days(2))).toBe("DedupWindowTooShort");
    expect(path({}, Duration.days(4))).toBeUndefined();
    expect(path({ maxRecordAge: "unbounded" }, Duration.days(2))).toBe("DedupWindowTooShort");
    expect(path({ maxRecordAge: "unbounded" }, Duration.days(4))).toBeUndefined();
  });

  it("counts 24 h for a DynamoDB stream with an unbounded record age", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    new DedupTable(stack, "Dedup", { window: Duration.hours(12) }).addConsumer(c);
    const table = new dynamodb.Table(stack, "T", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.NEW_IMAGE,
    });
    c.addDynamoDbStreamTrigger(table, { maxRecordAge: "unbounded" });
    let message = "";
    try {
      Template.fromStack(stack);
    } catch (e) {
      message = String(e);
    }
    expect(message).toMatch(/DedupWindowTooShort/);
    expect(message).toMatch(/DynamoDB stream of S\/T: retention 1d = 1d \(86400s\)/);
  });
});

describe("the CDK guide's example (examples/streamTriggers.ts)", () => {
  it("attaches a Kinesis and a DynamoDB Streams consumer, both deduplicating", async () => {
    const { StreamConsumersStack } = await import("../../examples/streamTriggers.ts");
    const stack = new StreamConsumersStack(testApp(), "Streams", {
      kinesisEntry: STUB_ENTRY,
      dynamoDbEntry: STUB_ENTRY,
    });
    const t = Template.fromStack(stack);
    t.resourceCountIs("AWS::Lambda::EventSourceMapping", 2);
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", { BatchSize: 500 });
    t.hasResourceProperties("AWS::Kinesis::Stream", { RetentionPeriodHours: 48 });
    // One parking queue per consumer.
    t.resourceCountIs("AWS::SQS::Queue", 2);
  });
});
