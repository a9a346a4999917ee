import { Duration, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { ConsumerFunction, DedupTable, SqsTrigger } from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";
import { STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { ruleCodeOf, testApp } from "./synthHelpers.ts";

// Queues and tables made elsewhere: the rules that can be read at synth are checked, the others
// are said as warnings, and every call the function makes is granted on the imported resource.
const QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:orders";
const DLQ_ARN = "arn:aws:sqs:eu-west-1:123456789012:orders-dlq";

const consumer = (stack: Stack, timeout = Duration.seconds(30)) =>
  new ConsumerFunction(stack, "C", { entry: STUB_ENTRY, timeout });
const warningsOf = (stack: Stack) =>
  Annotations.fromStack(stack)
    .findWarning("*", Match.anyValue())
    .map((w) => String(w.entry.data));

describe("an SQS trigger on an imported queue", () => {
  it("maps the queue with ReportBatchItemFailures and grants consume on it, send on its DLQ", () => {
    const stack = new Stack(testApp(), "S");
    const queue = sqs.Queue.fromQueueArn(stack, "Orders", QUEUE_ARN);
    const dlq = sqs.Queue.fromQueueArn(stack, "OrdersDlq", DLQ_ARN);
    consumer(stack).addSqsTrigger(queue, {
      deadLetterQueue: dlq,
      batchSize: 25,
      maxBatchingWindow: Duration.seconds(2),
    });
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: QUEUE_ARN,
      BatchSize: 25,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
    });
    const statements = JSON.stringify(t.findResources("AWS::IAM::Policy"));
    expect(statements).toContain("sqs:ReceiveMessage");
    expect(statements).toContain(QUEUE_ARN);
    expect(statements).toContain(DLQ_ARN);
    // A healthy record on its last receive goes back to its own (standard) queue: send on both.
    const sends = Object.values(t.findResources("AWS::IAM::Policy")).flatMap(
      (p) =>
        (
          p as {
            Properties: { PolicyDocument: { Statement: Array<{ Action: unknown; Resource: unknown }> } };
          }
        ).Properties.PolicyDocument.Statement,
    );
    const sendTargets = sends
      .filter((s) => JSON.stringify(s.Action).includes("sqs:SendMessage"))
      .map((s) => JSON.stringify(s.Resource));
    expect(sendTargets.some((r) => r.includes(QUEUE_ARN))).toBe(true);
    expect(sendTargets.some((r) => r.includes(DLQ_ARN))).toBe(true);
  });

  it("says at synth what it cannot check: the visibility timeout and the retry path", () => {
    const stack = new Stack(testApp(), "S");
    const queue = sqs.Queue.fromQueueArn(stack, "Orders", QUEUE_ARN);
    consumer(stack).addSqsTrigger(queue, { deadLetterQueue: sqs.Queue.fromQueueArn(stack, "Dlq", DLQ_ARN) });
    const warnings = warningsOf(stack);
    expect(warnings.some((w) => /visibility timeout of S\/Orders is not known at synth/.test(w))).toBe(true);
    expect(warnings.some((w) => /retention of S\/Orders .* not known at synth/.test(w))).toBe(true);
  });

  it("fails synth when the imported queue has no dead-letter queue given", () => {
    const stack = new Stack(testApp(), "S");
    const queue = sqs.Queue.fromQueueArn(stack, "Orders", QUEUE_ARN);
    const c = consumer(stack);
    expect(ruleCodeOf(() => c.addSqsTrigger(queue))).toBe("SqsTriggerWithoutDlq");
  });

  it("binds as an event-source object too: consumer.addTrigger(new SqsTrigger(queue))", () => {
    const stack = new Stack(testApp(), "S");
    const queue = sqs.Queue.fromQueueArn(stack, "Orders", QUEUE_ARN);
    const trigger = new SqsTrigger(queue, { deadLetterQueue: sqs.Queue.fromQueueArn(stack, "Dlq", DLQ_ARN) });
    consumer(stack).addTrigger(trigger);
    expect(trigger.eventSource?.queue.queueArn).toBe(QUEUE_ARN);
  });
});

describe("an SQS trigger on an sqs.Queue built in the app", () => {
  it("reads its own deadLetterQueue and checks its visibility timeout against the function's", () => {
    const stack = new Stack(testApp(), "S");
    const dlq = new sqs.Queue(stack, "Dlq", { retentionPeriod: Duration.days(14) });
    const queue = new sqs.Queue(stack, "Q", {
      visibilityTimeout: Duration.seconds(60),
      deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
    });
    const c = consumer(stack);
    expect(ruleCodeOf(() => c.addSqsTrigger(queue))).toBe("VisibilityTimeoutTooShort");
    const ok = new sqs.Queue(stack, "Ok", {
      visibilityTimeout: Duration.minutes(3),
      deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
    });
    expect(() => c.addSqsTrigger(ok)).not.toThrow();
    expect(warningsOf(stack)).toEqual([]);
  });

  it("fails synth for a queue without a dead-letter queue", () => {
    const stack = new Stack(testApp(), "S");
    const c = consumer(stack);
    expect(
      ruleCodeOf(() =>
        c.addSqsTrigger(new sqs.Queue(stack, "Q", { visibilityTimeout: Duration.minutes(3) })),
      ),
    ).toBe("SqsTriggerWithoutDlq");
  });

  it("checks the dedup window against the retry path it can read (retention + DLQ + redrive)", () => {
    const stack = new Stack(testApp(), "S");
    const dlq = new sqs.Queue(stack, "Dlq", { retentionPeriod: Duration.days(14) });
    const queue = new sqs.Queue(stack, "Q", {
      visibilityTimeout: Duration.minutes(3),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
    });
    const table = new DedupTable(stack, "Dedup", { window: Duration.days(7) });
    const c = consumer(stack);
    table.addConsumer(c);
    c.addSqsTrigger(queue);
    expect(ruleCodeOf(() => Template.fromStack(stack))).toBe("DedupWindowTooShort");
  });
});

describe("DedupTable.fromTable", () => {
  it("grants exactly the dedup store's calls on the imported table and says what it cannot check", () => {
    const stack = new Stack(testApp(), "S");
    const imported = dynamodb.Table.fromTableName(stack, "Existing", "orders-dedup");
    const table = DedupTable.fromTable(stack, "Dedup", imported, { window: Duration.days(30) });
    const c = consumer(stack);
    table.addConsumer(c);
    const t = Template.fromStack(stack);
    t.resourceCountIs("AWS::DynamoDB::Table", 0);
    const policy = JSON.stringify(t.findResources("AWS::IAM::Policy"));
    expect(policy).toContain("table/orders-dedup");
    for (const action of ["dynamodb:UpdateItem", "dynamodb:PartiQLInsert", "dynamodb:BatchGetItem"])
      expect(policy).toContain(action);
    expect(policy).not.toContain("dynamodb:Scan");
    t.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({ DEDUP_TABLE_NAME: "orders-dedup", DEDUP_WINDOW_SECONDS: "2592000" }),
      },
    });
    expect(
      warningsOf(stack).some((w) => /imported dedup table: its key schema and TTL are not checked/.test(w)),
    ).toBe(true);
  });

  it("keeps the window rule: a window shorter than a trigger's retry path fails synth", () => {
    const stack = new Stack(testApp(), "S");
    const imported = dynamodb.Table.fromTableName(stack, "Existing", "orders-dedup");
    const table = DedupTable.fromTable(stack, "Dedup", imported, { window: Duration.days(1) });
    const dlq = new sqs.Queue(stack, "Dlq", { retentionPeriod: Duration.days(14) });
    const queue = new sqs.Queue(stack, "Q", {
      visibilityTimeout: Duration.minutes(3),
      deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
    });
    const c = consumer(stack);
    table.addConsumer(c);
    c.addSqsTrigger(queue);
    expect(ruleCodeOf(() => Template.fromStack(stack))).toBe("DedupWindowTooShort");
  });
});

describe("the CDK guide's example (examples/importedQueue.ts)", () => {
  it("consumes another team's queue with its DLQ and dedups on its table", async () => {
    const { ExistingQueueStack } = await import("../../examples/importedQueue.ts");
    const stack = new ExistingQueueStack(testApp(), "Existing", {
      queueArn: QUEUE_ARN,
      deadLetterQueueArn: DLQ_ARN,
      dedupTableName: "orders-dedup",
      entry: STUB_ENTRY,
    });
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", { EventSourceArn: QUEUE_ARN });
    t.resourceCountIs("AWS::SQS::Queue", 0);
    t.resourceCountIs("AWS::DynamoDB::Table", 0);
    expect(JSON.stringify(t.findResources("AWS::IAM::Policy"))).toContain("table/orders-dedup");
  });
});
