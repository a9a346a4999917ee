import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { createDedupStore } from "reliable-consumers";
import { type LocalRuntime, startLocalRuntime } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { newEventId, toOutboxItem } from "../../../lib/outbox/outboxEvent.ts";
import { OUTBOX_DEFAULTS } from "../../../lib/outbox/schema.ts";
import { withBrowser } from "../../../test/support/browser.ts";
import { dynamodb, kafka, sqs } from "../../../test/support/clients.ts";
import { names } from "../../../test/support/names.ts";
import {
  consoleForRuntime,
  consoleLogTee,
  createTelemetryHub,
  type LocalConsole,
} from "../../src/console/localConsole.ts";
import type { CfnTemplate } from "../../src/runtime/cloudAssembly.ts";
import { createDedupTable, deleteTable } from "../../src/services/dynamodb/dedupTable.ts";

/**
 * The console's views that examples/consumer-app has no data for (test/package/consoleBrowser.test.ts
 * covers the rest): Kafka's ladder, lag and dead-letter topic with its replay, the outbox with a
 * parked event and its requeue, a dedup lookup, and a denied call, each in Chromium on the console
 * of a local runtime in this process (the page bundled from the sources). One runtime for the file;
 * each test opens its own browser and makes its own data.
 */
const name = names(import.meta.url);
const ASSET_ROOT = fileURLToPath(new URL("../fixtures/templates/", import.meta.url));
const CLUSTER = "arn:aws:kafka:us-east-1:111111111111:cluster/c/1";
const ddb = dynamodb();
const sqsClient = sqs();
const prefix = name("");
const topic = `${prefix}orders`;
const group = `${prefix}group`;
const record = name("record");
let runtime: LocalRuntime;
let served: LocalConsole;

/** What an MSK event source mapping needs of its role besides consuming (AWSLambdaMSKExecutionRole). */
const MSK_MAPPING_ROLE = [
  { Effect: "Allow", Action: "kafka:DescribeClusterV2", Resource: CLUSTER },
  {
    Effect: "Allow",
    Action: [
      "kafka:GetBootstrapBrokers",
      "ec2:CreateNetworkInterface",
      "ec2:DescribeNetworkInterfaces",
      "ec2:DeleteNetworkInterface",
      "ec2:DescribeVpcs",
      "ec2:DescribeSubnets",
      "ec2:DescribeSecurityGroups",
    ],
    Resource: "*",
  },
];

const role = (id: string, statements: ReadonlyArray<Record<string, unknown>>) => ({
  [`${id}Role`]: {
    Type: "AWS::IAM::Role",
    Properties: {
      AssumeRolePolicyDocument: {
        Version: "2012-10-17",
        Statement: [
          { Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" }, Action: "sts:AssumeRole" },
        ],
      },
    },
  },
  [`${id}Policy`]: {
    Type: "AWS::IAM::Policy",
    Properties: {
      PolicyName: id,
      Roles: [{ Ref: `${id}Role` }],
      PolicyDocument: { Version: "2012-10-17", Statement: statements },
    },
  },
});

const fn = (id: string, env: Record<string, unknown>) => ({
  Type: "AWS::Lambda::Function",
  Metadata: { "aws:asset:path": "scripted" },
  Properties: {
    Runtime: "nodejs24.x",
    Handler: "index.handler",
    Timeout: 10,
    MemorySize: 256,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation Fn::Sub syntax
    Code: { S3Bucket: { "Fn::Sub": "cdk-assets-${AWS::AccountId}-${AWS::Region}" }, S3Key: "scripted.zip" },
    Environment: { Variables: env },
    Role: { "Fn::GetAtt": [`${id}Role`, "Arn"] },
  },
});

const topicResource = (topicName: string) => ({
  Type: "AWS::MSK::Topic",
  Properties: { ClusterArn: CLUSTER, TopicName: topicName, PartitionCount: 1, ReplicationFactor: 1 },
});

/** A Kafka consumer with a dedup table and its ladder's topics; an outbox table; a function whose role lacks a grant. */
function template(): CfnTemplate {
  const topicArn = (t: string) => `arn:aws:kafka:us-east-1:111111111111:topic/c/1/${t}`;
  return {
    Resources: {
      Main: topicResource(topic),
      Retry: topicResource(`${topic}.retry.5s`),
      Dlq: topicResource(`${topic}.DLQ`),
      Dedup: {
        Type: "AWS::DynamoDB::Table",
        Properties: {
          KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
          AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
          BillingMode: "PAY_PER_REQUEST",
          TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
        },
      },
      App: {
        Type: "AWS::DynamoDB::Table",
        Properties: {
          KeySchema: [
            { AttributeName: "pk", KeyType: "HASH" },
            { AttributeName: "sk", KeyType: "RANGE" },
          ],
          AttributeDefinitions: [
            { AttributeName: "pk", AttributeType: "S" },
            { AttributeName: "sk", AttributeType: "S" },
            { AttributeName: "pending", AttributeType: "S" },
            { AttributeName: "pendingSince", AttributeType: "N" },
          ],
          BillingMode: "PAY_PER_REQUEST",
          GlobalSecondaryIndexes: [
            {
              IndexName: "pending-index",
              KeySchema: [
                { AttributeName: "pending", KeyType: "HASH" },
                { AttributeName: "pendingSince", KeyType: "RANGE" },
              ],
              Projection: { ProjectionType: "ALL" },
            },
          ],
        },
      },
      ...role("Consumer", [
        { Effect: "Allow", Action: "dynamodb:PutItem", Resource: `arn:aws:dynamodb:*:*:table/${record}` },
        // What Lambda checks the role for when it creates an MSK mapping (the local runtime too).
        ...MSK_MAPPING_ROLE,
        {
          Effect: "Allow",
          Action: ["kafka-cluster:Connect", "kafka-cluster:DescribeClusterDynamicConfiguration"],
          Resource: CLUSTER,
        },
        {
          Effect: "Allow",
          Action: ["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"],
          Resource: topicArn(topic),
        },
        {
          Effect: "Allow",
          Action: ["kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"],
          Resource: `arn:aws:kafka:us-east-1:111111111111:group/c/1/${group}`,
        },
      ]),
      Consumer: fn("Consumer", {
        RECORD_TABLE: record,
        KAFKA_BROKERS: "b-1.c.abc.c1.kafka.us-east-1.amazonaws.com:9098",
        MSK_IAM_AUTH: "true",
        DEDUP_TABLE_NAME: { Ref: "Dedup" },
        CONSUMER_NAME: "ScriptedConsumer",
      }),
      Mapping: {
        Type: "AWS::Lambda::EventSourceMapping",
        DependsOn: ["Main"],
        Properties: {
          FunctionName: { Ref: "Consumer" },
          EventSourceArn: CLUSTER,
          Topics: [topic],
          AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: group },
          StartingPosition: "TRIM_HORIZON",
          BatchSize: 10,
          MaximumBatchingWindowInSeconds: 1,
        },
      },
      Jobs: { Type: "AWS::SQS::Queue", Properties: {} },
      // Its role may consume the queue, but not write the record table its code writes: denied.
      ...role("Ungranted", [
        {
          Effect: "Allow",
          Action: [
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
            "sqs:ChangeMessageVisibility",
          ],
          Resource: { "Fn::GetAtt": ["Jobs", "Arn"] },
        },
      ]),
      Ungranted: fn("Ungranted", { RECORD_TABLE: record }),
      JobsMapping: {
        Type: "AWS::Lambda::EventSourceMapping",
        Properties: {
          FunctionName: { Ref: "Ungranted" },
          EventSourceArn: { "Fn::GetAtt": ["Jobs", "Arn"] },
          BatchSize: 1,
        },
      },
    },
  };
}

const tableOf = (logicalId: string) => runtime.app.tables.find((t) => t.logicalId === logicalId)!.name;
const fnOf = (logicalId: string) => runtime.app.functions.find((f) => f.logicalId === logicalId)!.name;

beforeAll(async () => {
  await createDedupTable(ddb, record);
  const hub = createTelemetryHub();
  runtime = await startLocalRuntime({
    template: template(),
    assetRoot: ASSET_ROOT,
    stackName: "Console",
    namePrefix: prefix,
    // Each function's log to a file (not this process's stderr) and to the console.
    logDir: join(tmpdir(), "console-views-logs"),
    logTee: consoleLogTee(hub),
  });
  served = await consoleForRuntime(runtime, inject("emulatorEnv"), hub, undefined);
}, 180_000);

afterAll(async () => {
  await served?.stop();
  await runtime?.stop();
  await deleteTable(ddb, record);
  ddb.destroy();
  sqsClient.destroy();
}, 60_000);

const at = (hash: string) => `${served.url}${hash}`;

describe("the local console's views in Chromium: Kafka, outbox, dedup, denials", () => {
  it("Kafka: the ladder's topics with their end offsets and the group's lag, live; the DLQ topic's records with their context; replay sends one back and the consumer runs it", async () => {
    const k = kafka("console-views");
    const producer = k.producer();
    await producer.connect();
    try {
      await withBrowser(async ({ page, errors }) => {
        await page.goto(at("#/kafka"));
        const ladder = page.getByTestId(`ladder-${topic}`);
        await ladder.waitFor();
        expect(await ladder.textContent()).toContain(`${topic}.retry.5s`);
        const end = page.getByTestId(`end-${topic}`);
        const before = Number(await end.textContent());
        await producer.send({
          topic,
          messages: [1, 2].map((i) => ({ value: JSON.stringify({ id: `k${i}`, do: "ok" }) })),
        });
        await expect.poll(async () => Number(await end.textContent()), { timeout: 30_000 }).toBe(before + 2);
        await expect
          .poll(() => page.getByTestId(`lag-${topic}`).textContent(), { timeout: 60_000 })
          .toBe(`${group}: 0`);

        const id = `k-dl-${Date.now()}`;
        await producer.send({
          topic: `${topic}.DLQ`,
          messages: [
            {
              key: "customer-7",
              value: JSON.stringify({ id, do: "ok" }),
              headers: {
                "x-original-topic": topic,
                "x-original-partition": "0",
                "x-original-offset": "41",
                "x-last-error": "SchemaMismatchError: amount must be positive",
                "x-retry-count": "3",
                "x-message-id": id,
                "x-consumer": "ScriptedConsumer",
              },
            },
          ],
        });
        await page.goto(at(`#/kafka/${topic}.DLQ`));
        const letter = page.getByTestId("letter").filter({ hasText: id });
        await letter.waitFor({ timeout: 60_000 });
        expect(await letter.getByTestId("failure-context").textContent()).toMatch(
          /x-last-error\s*SchemaMismatchError: amount must be positive/,
        );
        expect(await letter.getByTestId("failure-context").textContent()).toContain(
          `x-original-topic${topic}`,
        );
        await page.goto(at(`#/functions/${fnOf("Consumer")}`));
        await page.getByTestId("log-lines").waitFor();
        const runs = async () =>
          ((await page.getByTestId("log-lines").textContent())?.match(/REPORT RequestId/g) ?? []).length;
        const ran = await runs();
        await page.goto(at(`#/kafka/${topic}.DLQ`));
        await letter.getByTestId("select").check();
        await page.getByTestId("replay-selected").click();
        await expect
          .poll(() => page.getByTestId("action-result").textContent(), { timeout: 60_000 })
          .toMatch(new RegExp(`^replayed 1 of \\d+ \\(1 → ${topic}\\)`));
        await page.goto(at(`#/functions/${fnOf("Consumer")}`));
        await expect.poll(runs, { timeout: 60_000 }).toBeGreaterThan(ran);
        expect(errors).toEqual([]);
      });
    } finally {
      await producer.disconnect();
    }
  }, 240_000);

  it("Outbox: the pending count and oldest age, a parked event with its error; requeue puts it back in line", async () => {
    const table = tableOf("App");
    const put = async (aggregateId: string, extra: Record<string, { S: string } | { N: string }>) => {
      const event = {
        eventId: newEventId(),
        aggregateType: "Order",
        aggregateId,
        eventType: "OrderPlaced",
        payload: JSON.stringify({ aggregateId }),
        contentType: "application/json",
        schemaVersion: "1",
        headers: {},
        createdAt: Date.now(),
        destination: `kafka:${topic}`,
        causationId: `cause-${aggregateId}`,
      };
      const item = toOutboxItem(event, {
        retentionSeconds: 3600,
        pendingShards: OUTBOX_DEFAULTS.pendingShards,
      });
      if (extra.parkedAt) {
        delete item.pending;
        delete item.pendingSince;
      }
      await ddb.send(new PutItemCommand({ TableName: table, Item: { ...item, ...extra } }));
      return event;
    };
    await put(`a-${Date.now()}`, {});
    const parked = await put(`b-${Date.now()}`, {
      parkedAt: { N: String(Date.now()) },
      lastError: { S: "UnknownDestinationError: no route kafka:nowhere" },
    });
    await withBrowser(async ({ page, errors }) => {
      await page.goto(at("#/outbox"));
      const section = page.getByTestId(`outbox-${table}`);
      await section.waitFor();
      const pending = section.getByTestId("pending");
      await expect
        .poll(async () => Number(await pending.textContent()), { timeout: 30_000 })
        .toBeGreaterThanOrEqual(1);
      const before = Number(await pending.textContent());
      expect(await section.textContent()).toMatch(/pending · oldest \d/);
      const row = section.getByTestId("parked").locator("tr").filter({ hasText: parked.aggregateId });
      expect(await row.textContent()).toContain("UnknownDestinationError: no route kafka:nowhere");
      await row.getByTestId("requeue").click();
      await expect
        .poll(() => page.getByTestId("action-result").textContent())
        .toContain(`${parked.eventId} is pending again`);
      await expect
        .poll(async () => Number(await pending.textContent()), { timeout: 30_000 })
        .toBe(before + 1);
      expect(
        await section.getByTestId("parked").locator("tr").filter({ hasText: parked.aggregateId }).count(),
      ).toBe(0);
      expect(errors).toEqual([]);
    });
  }, 120_000);

  it("Dedup: a key looked up shows its status, lease and TTL, and changes when the claim completes", async () => {
    const store = createDedupStore({ tableName: tableOf("Dedup"), scope: "ScriptedConsumer", client: ddb });
    const key = `order-${Date.now()}`;
    const claim = await store.claim(key);
    expect(claim.status).toBe("claimed");
    await store.flush();
    await withBrowser(async ({ page, errors }) => {
      await page.goto(at("#/dedup"));
      await page.getByTestId("dedup-table").selectOption(tableOf("Dedup"));
      await expect.poll(() => page.getByTestId("dedup-scope").inputValue()).toBe("ScriptedConsumer");
      await page.getByTestId("dedup-key").fill(key);
      await page.getByTestId("dedup-lookup").click();
      await expect.poll(() => page.getByTestId("dedup-status").textContent()).toBe("IN_PROGRESS");
      const fields = (await page.getByTestId("dedup-record").textContent())!;
      expect(fields).toContain(`ScriptedConsumer#${key}`);
      expect(fields).toMatch(/lease expires.*\(in \d/);
      expect(fields).toMatch(/TTL \(expiresAt\)\d{4}-/);
      if (claim.status === "claimed") await store.complete(claim.lease);
      await store.flush();
      await page.getByTestId("dedup-lookup").click();
      await expect.poll(() => page.getByTestId("dedup-status").textContent()).toBe("COMPLETED");
      expect(await page.getByTestId("dedup-record").textContent()).toContain(
        "a delivery with this key is a duplicate",
      );
      await page.getByTestId("dedup-key").fill(`${key}-never`);
      await page.getByTestId("dedup-lookup").click();
      await expect.poll(() => page.getByTestId("dedup-record").textContent()).toContain("never claimed");
      expect(errors).toEqual([]);
    });
  }, 120_000);

  it("Denials: a call the function's role does not allow shows live, with the grant that would allow it", async () => {
    await withBrowser(async ({ page, errors }) => {
      await page.goto(at("#/denials"));
      await page.getByTestId("denial-count").waitFor();
      const jobs = runtime.app.queues.find((q) => q.logicalId === "Jobs")!;
      await sqsClient.send(
        new SendMessageCommand({ QueueUrl: jobs.url, MessageBody: JSON.stringify({ id: "d1", do: "ok" }) }),
      );
      const denials = page.getByTestId("denials");
      await expect.poll(() => denials.textContent(), { timeout: 60_000 }).toContain("dynamodb:PutItem");
      const text = (await denials.textContent())!;
      expect(text).toContain(fnOf("Ungranted"));
      expect(text).toContain(record);
      expect(text).toMatch(/grant/i);
      expect(errors).toEqual([]);
    });
  }, 120_000);
});
