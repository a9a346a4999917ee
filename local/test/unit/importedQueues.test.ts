/**
 * Issue 33, the pure parts: which values of a template name a queue it does not create
 * (`constantStrings` + `importedQueueOf`), and how resolution replaces them by a stand-in's
 * (`ResolveContext.alias`: a computed value is replaced, the inputs of an intrinsic are not).
 */
import { describe, expect, it } from "vitest";
import type { CfnTemplate } from "../../src/runtime/cloudAssembly.ts";
import { constantStrings } from "../../src/runtime/constantStrings.ts";
import { type ResolveContext, resolveValue, UnresolvableError } from "../../src/runtime/intrinsics.ts";
import { importedQueueOf, importedQueuesIn, ownQueueArns } from "../../src/services/sqs/importedQueues.ts";

const ORDERS = "arn:aws:sqs:eu-west-1:123456789012:orders";
const DLQ = "arn:aws:sqs:eu-west-1:123456789012:orders-dlq";
const DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq";

/** What `sqs.Queue.fromQueueArn(…).queueUrl` synthesizes to. */
const urlOf = (name: string) => ({
  "Fn::Join": ["", ["https://sqs.eu-west-1.", { Ref: "AWS::URLSuffix" }, `/123456789012/${name}`]],
});

const ctx = (aliases: Record<string, string> = {}): ResolveContext => ({
  region: "us-east-1",
  accountId: "000000000000",
  stackName: "S",
  ref: (id) => {
    if (id === "QueueArnParam") return "arn:aws:sqs:eu-west-1:123456789012:from-param";
    throw new UnresolvableError(`${id} is not materialised`);
  },
  getAtt: (id, attr) => {
    throw new UnresolvableError(`${id}.${attr} is not materialised`);
  },
  condition: (name) => name !== "Never",
  alias: (v) => aliases[v],
});

describe("importedQueueOf", () => {
  it("reads an SQS queue ARN and every form of its URL", () => {
    expect(importedQueueOf(ORDERS)).toEqual({
      queue: { arn: ORDERS, name: "orders", fifo: false },
      form: "arn",
    });
    for (const url of [
      "https://sqs.eu-west-1.amazonaws.com/123456789012/orders",
      "https://eu-west-1.queue.amazonaws.com/123456789012/orders",
    ])
      expect(importedQueueOf(url)).toEqual({
        queue: { arn: ORDERS, name: "orders", fifo: false },
        form: "url",
      });
    expect(importedQueueOf("https://queue.amazonaws.com/123456789012/jobs")?.queue.arn).toBe(
      "arn:aws:sqs:us-east-1:123456789012:jobs",
    );
    expect(importedQueueOf("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/jobs")?.queue.arn).toBe(
      "arn:aws-cn:sqs:cn-north-1:123456789012:jobs",
    );
  });

  it("takes a name ending in .fifo for a FIFO queue", () => {
    expect(importedQueueOf("arn:aws:sqs:eu-west-1:123456789012:events.fifo")?.queue).toEqual({
      arn: "arn:aws:sqs:eu-west-1:123456789012:events.fifo",
      name: "events.fifo",
      fifo: true,
    });
  });

  it("names no queue for wildcards, other services, or a name SQS refuses", () => {
    for (const value of [
      "arn:aws:sqs:eu-west-1:123456789012:*",
      "arn:aws:sqs:*:123456789012:orders",
      "*",
      "arn:aws:sns:eu-west-1:123456789012:orders",
      "arn:aws:sqs:eu-west-1:123456789012:orders/extra",
      `arn:aws:sqs:eu-west-1:123456789012:${"q".repeat(81)}`,
      "https://sqs.eu-west-1.amazonaws.com/123456789012/",
      "https://example.com/123456789012/orders",
    ])
      expect(importedQueueOf(value), value).toBeUndefined();
  });
});

describe("constantStrings: the values a template computes without its own resources", () => {
  const template: CfnTemplate = {
    Parameters: { QueueArnParam: { Type: "String", Default: "unused: the context answers" } },
    Conditions: {},
    Resources: {
      Queue: { Type: "AWS::SQS::Queue", Properties: {} },
      // Named, and named by that name's ARN (QueueWithDlq's redrive-allow policy): its own, not an import.
      Jobs: { Type: "AWS::SQS::Queue", Properties: { QueueName: "S-Jobs-1" } },
      JobsDlq: {
        Type: "AWS::SQS::Queue",
        Properties: {
          RedriveAllowPolicy: {
            redrivePermission: "byQueue",
            sourceQueueArns: [
              {
                "Fn::Join": [
                  "",
                  [
                    "arn:",
                    { Ref: "AWS::Partition" },
                    ":sqs:",
                    { Ref: "AWS::Region" },
                    ":",
                    { Ref: "AWS::AccountId" },
                    ":S-Jobs-1",
                  ],
                ],
              },
            ],
          },
        },
      },
      Mapping: {
        Type: "AWS::Lambda::EventSourceMapping",
        Properties: { EventSourceArn: ORDERS, FunctionName: { Ref: "Fn" } },
      },
      Policy: {
        Type: "AWS::IAM::Policy",
        Properties: {
          PolicyDocument: {
            Statement: [
              { Effect: "Allow", Action: ["sqs:ReceiveMessage"], Resource: ORDERS },
              {
                Effect: "Allow",
                Action: "sqs:SendMessage",
                Resource: [DLQ, { "Fn::GetAtt": ["Queue", "Arn"] }],
              },
              { Effect: "Allow", Action: "sqs:SendMessage", Resource: { Ref: "QueueArnParam" } },
              // Built from a resource of the template: looked into, not resolved.
              {
                Effect: "Allow",
                Action: "sqs:SendMessage",
                Resource: { "Fn::Join": ["", [{ "Fn::GetAtt": ["Queue", "Arn"] }, "-copy"]] },
              },
              { Effect: "Allow", Action: "sqs:*", Resource: "arn:aws:sqs:eu-west-1:123456789012:*" },
            ],
          },
          Roles: [{ Ref: "Role" }],
        },
      },
      Fn: {
        Type: "AWS::Lambda::Function",
        Properties: {
          Environment: {
            Variables: {
              DLQ_URL: urlOf("orders-dlq"),
              OWN_URL: { Ref: "Queue" },
              SHARED: { "Fn::ImportValue": "SharedQueueUrl" },
            },
          },
        },
      },
      Disabled: {
        Type: "AWS::Lambda::EventSourceMapping",
        Condition: "Never",
        Properties: { EventSourceArn: "arn:aws:sqs:eu-west-1:123456789012:ignored" },
      },
    },
  };

  it("finds the imported queues by ARN and URL, and none of the template's own", () => {
    const strings = constantStrings(template, ctx());
    expect(strings).toContain(DLQ_URL);
    const own = ownQueueArns(template, ctx());
    expect([...own]).toEqual(["arn:aws:sqs:us-east-1:000000000000:S-Jobs-1"]);
    expect(strings).toContain("arn:aws:sqs:us-east-1:000000000000:S-Jobs-1");
    const imported = importedQueuesIn(strings, own);
    expect([...imported.keys()].sort()).toEqual(
      [ORDERS, DLQ, "arn:aws:sqs:eu-west-1:123456789012:from-param"].sort(),
    );
    expect(imported.get(DLQ)?.refs).toEqual([
      { value: DLQ, form: "arn" },
      { value: DLQ_URL, form: "url" },
    ]);
  });
});

describe("ResolveContext.alias", () => {
  const local = ctx({
    [ORDERS]: "arn:aws:sqs:us-east-1:000000000000:orders",
    [DLQ_URL]: "http://127.0.0.1:4566/000000000000/orders-dlq",
  });

  it("replaces a literal or computed value that names an imported queue by its stand-in's", () => {
    expect(resolveValue({ Resource: [ORDERS, "*"] }, local)).toEqual({
      Resource: ["arn:aws:sqs:us-east-1:000000000000:orders", "*"],
    });
    expect(resolveValue(urlOf("orders-dlq"), local)).toBe("http://127.0.0.1:4566/000000000000/orders-dlq");
  });

  it("leaves the inputs of an intrinsic as the template names them", () => {
    // fromQueueArn of a token ARN takes the name and region apart: they stay the imported queue's.
    expect(resolveValue({ "Fn::Select": [5, { "Fn::Split": [":", ORDERS] }] }, local)).toBe("orders");
    expect(resolveValue({ "Fn::Join": ["", [ORDERS, "/*"]] }, local)).toBe(`${ORDERS}/*`);
  });
});
