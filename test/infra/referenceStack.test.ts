import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Match } from "aws-cdk-lib/assertions";
import { LAMBDA_ENV } from "reliable-consumers/cdk";
import { beforeAll, describe, expect, it } from "vitest";
import { REFERENCE_ENV } from "../../infra/referenceEnv.ts";
import { ORDER_EVENTS_LADDER } from "../../infra/stacks/referenceServiceStack.ts";
import { GUARD_PLUGIN } from "../../lib/cdk/guardAcknowledgements.ts";
import { ladderRuntimeConfig } from "../../lib/cdk/retryLadder.ts";
import { DEDUP_DEFAULTS, DEDUP_TABLE_ACTIONS } from "../../lib/dedup/schema.ts";
import { OUTBOX_STREAM_FILTER_PATTERN } from "../../lib/outbox/schema.ts";
import {
  acknowledgements,
  findingsOf,
  rawGuardFindings,
  synthReference,
  validationReport,
} from "./synthHelpers.ts";

// One synthesis of the reference app (default context, bundling skipped) shared by every assertion.
// It runs cdk-nag and cfn-guard (Control Tower rules) over the whole template: tens of seconds on
// two shared cores, so the hook gets more than the default minute.
const SYNTH_TIMEOUT_MS = 180_000;
let ref: ReturnType<typeof synthReference>;
beforeAll(() => {
  ref = synthReference();
}, SYNTH_TIMEOUT_MS);

// Template JSON is untyped; the assertions below check its shape.
// biome-ignore lint/suspicious/noExplicitAny: CloudFormation template JSON
type Json = any;
type Resource = { Type: string; Properties: Record<string, Json>; [k: string]: Json };
const resources = (type: string): Array<[string, Resource]> =>
  Object.entries(ref.template.findResources(type)) as Array<[string, Resource]>;
const logicalIdOf = (pathPart: string, type: string): string => {
  const ids = Object.keys(ref.template.findResources(type)).filter((id) => id.startsWith(pathPart));
  if (ids.length !== 1)
    throw new Error(`expected one ${type} starting with ${pathPart}, got ${ids.join(", ")}`);
  return ids[0]!;
};
const functionNamed = (service: string): [string, Resource] => {
  const found = resources("AWS::Lambda::Function").filter(
    ([, r]) => r.Properties.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === service,
  );
  expect(found).toHaveLength(1);
  return found[0]!;
};
const policyStatementsOf = (service: string): Json[] => {
  const [, fn] = functionNamed(service);
  const roleId = fn.Properties.Role["Fn::GetAtt"][0];
  return resources("AWS::IAM::Policy")
    .filter(([, p]) => p.Properties.Roles.some((r: Json) => r.Ref === roleId))
    .flatMap(([, p]) => p.Properties.PolicyDocument.Statement);
};
const asList = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);

describe("cdk-nag (AwsSolutions)", () => {
  it("has zero unacknowledged findings", () => {
    expect(findingsOf(ref.nag)).toEqual([]);
  });

  it("gives a reason with every acknowledgement", () => {
    const acks = acknowledgements(ref.stack);
    expect(acks.length).toBeGreaterThan(0);
    for (const a of acks) expect(a.reason.length, `${a.path} ${a.id}`).toBeGreaterThan(40);
  });
});

describe("AWS Control Tower proactive controls (cfn-guard at synth)", () => {
  const templatePath = () => join(ref.assembly.directory, ref.stack.templateFile);

  it("has zero unacknowledged findings, and a reason for every acknowledged one", () => {
    const guard = validationReport(ref.assembly.directory, GUARD_PLUGIN);
    expect(
      guard.violations.map((v) => `${v.ruleName} @ ${v.violatingConstructs.map((c) => c.constructPath)}`),
    ).toEqual([]);
    expect(guard.conclusion).toBe("success");
    for (const v of guard.suppressedViolations ?? [])
      expect(v.reason?.length, v.ruleName).toBeGreaterThan(40);
  });

  it("acknowledges only the log-group controls and the three dead-letter destinations; alarms notify, DLQs admit only their source, functions run in the VPC", () => {
    const findings = rawGuardFindings(templatePath());
    const byRule = (rule: string) =>
      findings
        .filter((f) => f.rule === rule)
        .map((f) => f.logicalId)
        .sort();
    expect(byRule("cloudwatch_alarm_action_check")).toEqual([]);
    expect(byRule("lambda_inside_vpc_check")).toEqual([]);
    expect(byRule("sqs_dlq_check").map((id) => id.replace(/[0-9A-F]{8}$/, ""))).toEqual([
      "AppRelayFailures",
      "OutboxParking",
      // activity-consumer's Kinesis trigger: its on-failure destination and parking queue.
      "activityconsumerStreamFailures",
    ]);
    expect(byRule("cloudwatch_log_group_retention_period_check")).toHaveLength(6);
    expect(byRule("cloudwatch_log_group_encrypted_check")).toHaveLength(6);
    expect(new Set(findings.map((f) => f.rule)).size).toBe(3);
  });

  it("records every remaining finding in the template: Metadata.guard.SuppressedRules with its reason", () => {
    const template = JSON.parse(readFileSync(templatePath(), "utf8"));
    const findings = rawGuardFindings(templatePath());
    expect(findings.length).toBeGreaterThan(0);
    for (const f of findings) {
      const guard = template.Resources[f.logicalId].Metadata?.guard;
      expect(guard?.SuppressedRules, `${f.logicalId} ${f.rule}`).toContain(f.rule);
      expect(guard.Reasons[f.rule].length, `${f.logicalId} ${f.rule}`).toBeGreaterThan(40);
    }
  });

  it("sends every alarm to an encrypted, TLS-only SNS topic that CloudWatch may publish to", () => {
    const [topicId, topic] = resources("AWS::SNS::Topic")[0]!;
    expect(resources("AWS::SNS::Topic")).toHaveLength(1);
    expect(topic.Properties.KmsMasterKeyId).toEqual({
      "Fn::GetAtt": [expect.stringMatching(/^MonitoringAlarmTopicKey/), "Arn"],
    });
    for (const [, a] of resources("AWS::CloudWatch::Alarm")) {
      expect(a.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(a.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
    const [, policy] = resources("AWS::SNS::TopicPolicy")[0]!;
    const statements = policy.Properties.PolicyDocument.Statement;
    expect(statements).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
        expect.objectContaining({
          Effect: "Allow",
          Principal: { Service: "cloudwatch.amazonaws.com" },
          Action: "sns:Publish",
        }),
      ]),
    );
    const [, key] = resources("AWS::KMS::Key")[0]!;
    expect(key.Properties.EnableKeyRotation).toBe(true);
  });
});

describe("queues with DLQs", () => {
  it("derive visibility from the consumer timeout, redrive at maxReceiveCount, encrypt, and keep retention", () => {
    // orders: 6 × 30 s; reports: 6 × 5 min
    ref.template.hasResourceProperties("AWS::SQS::Queue", {
      VisibilityTimeout: 180,
      MessageRetentionPeriod: 4 * 86_400,
      SqsManagedSseEnabled: true,
      RedrivePolicy: { maxReceiveCount: 5, deadLetterTargetArn: Match.anyValue() },
    });
    // reports: sized for the visibility heartbeat, the function timeout (5 min) instead of 6 ×.
    ref.template.hasResourceProperties("AWS::SQS::Queue", {
      VisibilityTimeout: 300,
      RedrivePolicy: { maxReceiveCount: 3, deadLetterTargetArn: Match.anyValue() },
    });
    ref.template.hasResourceProperties("AWS::SQS::Queue", {
      MessageRetentionPeriod: 14 * 86_400,
      SqsManagedSseEnabled: true,
    });
  });

  it("lets only its source queue use a DLQ (redrive-allow policy by queue)", () => {
    const queues = resources("AWS::SQS::Queue");
    const sources = queues.filter(([, q]) => q.Properties.RedrivePolicy);
    expect(sources).toHaveLength(2);
    for (const [, q] of sources) {
      const dlqId = q.Properties.RedrivePolicy.deadLetterTargetArn["Fn::GetAtt"][0];
      const dlq = queues.find(([id]) => id === dlqId)![1];
      expect(dlq.Properties.RedriveAllowPolicy.redrivePermission).toBe("byQueue");
      const allowed = JSON.stringify(dlq.Properties.RedriveAllowPolicy.sourceQueueArns);
      expect(allowed).toContain(`:${q.Properties.QueueName}"`);
    }
  });

  it("encrypts every queue and denies non-TLS access to every queue", () => {
    const queues = resources("AWS::SQS::Queue");
    expect(queues).toHaveLength(7);
    for (const [, q] of queues) expect(q.Properties.SqsManagedSseEnabled).toBe(true);
    const policies = resources("AWS::SQS::QueuePolicy");
    expect(policies).toHaveLength(7);
    for (const [, p] of policies) {
      expect(p.Properties.PolicyDocument.Statement).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            Effect: "Deny",
            Condition: { Bool: { "aws:SecureTransport": "false" } },
          }),
        ]),
      );
    }
  });
});

describe("dedup table", () => {
  it("is PAY_PER_REQUEST, keyed and expired by lib/dedup/schema.ts names, with PITR and SSE", () => {
    ref.template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
      BillingMode: "PAY_PER_REQUEST",
      TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
    const [id] = Object.keys(
      ref.template.findResources("AWS::DynamoDB::Table", {
        Properties: { KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }] },
      }),
    );
    expect(ref.template.toJSON().Resources[id!].DeletionPolicy).toBe("Retain");
  });

  it("grants exactly DEDUP_TABLE_ACTIONS on the dedup table to its consumers", () => {
    const dedupId = Object.keys(
      ref.template.findResources("AWS::DynamoDB::Table", {
        Properties: { KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }] },
      }),
    )[0]!;
    for (const service of ["report-worker", "payment-consumer"]) {
      const statements = policyStatementsOf(service).filter((s) =>
        JSON.stringify(s.Resource).includes(dedupId),
      );
      expect(statements).toHaveLength(1);
      expect(asList(statements[0].Action).sort()).toEqual([...DEDUP_TABLE_ACTIONS].sort());
      expect(statements[0].Resource).toEqual({ "Fn::GetAtt": [dedupId, "Arn"] });
    }
    const [, payment] = functionNamed("payment-consumer");
    expect(payment.Properties.Environment.Variables[LAMBDA_ENV.dedupTableName]).toEqual({ Ref: dedupId });
    expect(payment.Properties.Environment.Variables[LAMBDA_ENV.dedupWindowSeconds]).toBe(
      String(DEDUP_DEFAULTS.windowSeconds),
    );
  });
});

describe("app/outbox table, relay and sweeper", () => {
  it("has pk/sk, stream NEW_IMAGE, TTL and the sparse pending GSI", () => {
    ref.template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ],
      BillingMode: "PAY_PER_REQUEST",
      StreamSpecification: { StreamViewType: "NEW_IMAGE" },
      TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
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
      AttributeDefinitions: Match.arrayWith([
        { AttributeName: "pending", AttributeType: "S" },
        { AttributeName: "pendingSince", AttributeType: "N" },
      ]),
    });
  });

  it("wires the relay: filter, no batching window, bisect, partial batch responses, retry limit, record age, on-failure destination", () => {
    const [relayId] = functionNamed("outbox-relay");
    ref.template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      FunctionName: { Ref: relayId },
      EventSourceArn: { "Fn::GetAtt": [Match.anyValue(), "StreamArn"] },
      StartingPosition: "TRIM_HORIZON",
      FilterCriteria: { Filters: [{ Pattern: JSON.stringify(OUTBOX_STREAM_FILTER_PATTERN) }] },
      // An event goes out at the shard's next poll, not a window later (the steady-rate latency).
      MaximumBatchingWindowInSeconds: 0,
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      MaximumRetryAttempts: 20,
      MaximumRecordAgeInSeconds: 6 * 3600,
      ParallelizationFactor: 1,
      DestinationConfig: {
        OnFailure: { Destination: { "Fn::GetAtt": [Match.stringLikeRegexp("^AppRelayFailures"), "Arn"] } },
      },
    });
  });

  it("runs the sweeper every minute, with Query on the pending index and the table (the order check), nowhere else", () => {
    const [sweeperId] = functionNamed("outbox-sweeper");
    ref.template.hasResourceProperties("AWS::Events::Rule", {
      ScheduleExpression: "rate(1 minute)",
      Targets: [
        Match.objectLike({
          Arn: { "Fn::GetAtt": [sweeperId, "Arn"] },
          RetryPolicy: { MaximumRetryAttempts: 0 },
        }),
      ],
    });
    const query = policyStatementsOf("outbox-sweeper").find((s) =>
      asList(s.Action).includes("dynamodb:Query"),
    );
    expect(JSON.stringify(query.Resource)).toContain("/index/pending-index");
    const appId = logicalIdOf("AppTable", "AWS::DynamoDB::Table");
    expect(asList(query.Resource).map((r) => JSON.stringify(r))).toHaveLength(2);
    expect(JSON.stringify(query.Resource)).toContain(appId);
  });

  it("gives order-consumer the unit-of-work actions on the app table and its name", () => {
    const appId = logicalIdOf("AppTable", "AWS::DynamoDB::Table");
    const stmt = policyStatementsOf("order-consumer").find((s) => JSON.stringify(s.Resource).includes(appId));
    expect(asList(stmt.Action)).toEqual(
      expect.arrayContaining(["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"]),
    );
    const [, fn] = functionNamed("order-consumer");
    expect(fn.Properties.Environment.Variables[LAMBDA_ENV.appTableName]).toEqual({ Ref: appId });
    // Its outbox events go to the ladder's main topic.
    expect(fn.Properties.Environment.Variables[LAMBDA_ENV.kafkaTopic]).toBe("order-events");
  });
});

describe("consumer functions", () => {
  it("are Node 24 on arm64, ESM bundles with source maps, with their own log group and role", () => {
    const fns = resources("AWS::Lambda::Function");
    expect(fns).toHaveLength(6);
    for (const [, fn] of fns) {
      expect(fn.Properties.Runtime).toBe("nodejs24.x");
      expect(fn.Properties.Architectures).toEqual(["arm64"]);
      expect(fn.Properties.Handler).toBe("index.handler");
      expect(fn.Properties.Environment.Variables.NODE_OPTIONS).toBe("--enable-source-maps");
      expect(fn.Properties.Environment.Variables[LAMBDA_ENV.powertoolsMetricsNamespace]).toBe(
        "ReliableConsumers",
      );
      expect(fn.Properties.LoggingConfig.LogGroup).toBeDefined();
    }
    for (const [, role] of resources("AWS::IAM::Role"))
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it("activity-consumer reads the order-activity stream (2 provisioned shards) with partial responses, bisect and its parking queue", () => {
    const streams = resources("AWS::Kinesis::Stream");
    expect(streams).toHaveLength(1);
    const [streamId, stream] = streams[0]!;
    expect(stream.Properties.ShardCount).toBe(2);
    const [fnId, fn] = functionNamed("activity-consumer");
    const mapping = resources("AWS::Lambda::EventSourceMapping").find(([, m]) =>
      JSON.stringify(m.Properties.EventSourceArn).includes(streamId),
    );
    expect(mapping).toBeDefined();
    const p = mapping![1].Properties;
    expect(p.FunctionName).toEqual({ Ref: fnId });
    expect(p.FunctionResponseTypes).toEqual(["ReportBatchItemFailures"]);
    expect(p.BisectBatchOnFunctionError).toBe(true);
    const destination = p.DestinationConfig.OnFailure.Destination["Fn::GetAtt"][0];
    expect(destination).toMatch(/^activityconsumerStreamFailures/);
    // The same queue is where the consumer parks bad input itself.
    expect(fn.Properties.Environment.Variables[LAMBDA_ENV.dlqUrl]).toEqual({ Ref: destination });
  });

  it("trigger from SQS with ReportBatchItemFailures, batch size and maximum concurrency", () => {
    const [orderId, order] = functionNamed("order-consumer");
    ref.template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      FunctionName: { Ref: orderId },
      BatchSize: 10,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: 10 },
    });
    const [reportId, report] = functionNamed("report-worker");
    ref.template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      FunctionName: { Ref: reportId },
      BatchSize: 1,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: 2 },
    });
    const env = order.Properties.Environment.Variables;
    for (const name of [REFERENCE_ENV.ordersQueueUrl, REFERENCE_ENV.ordersDlqUrl, LAMBDA_ENV.dlqUrl])
      expect(env[name]).toBeDefined();
    expect(env[REFERENCE_ENV.ordersDlqUrl]).toEqual(env[LAMBDA_ENV.dlqUrl]);
    expect(report.Properties.Environment.Variables[REFERENCE_ENV.reportQueueUrl]).toBeDefined();
    expect(report.Properties.Timeout).toBe(300);
    expect(report.Properties.Environment.Variables[LAMBDA_ENV.appTableName]).toBeDefined();
    for (const [, fn] of [functionNamed("outbox-relay"), functionNamed("outbox-sweeper")]) {
      expect(fn.Properties.Environment.Variables[LAMBDA_ENV.outboxParkingQueueUrl]).toBeDefined();
      expect(fn.Properties.Environment.Variables[LAMBDA_ENV.kafkaBrokers]).toMatch(/:9098/);
    }
  });

  it("let SQS consumers park permanent failures in their DLQ, and requeue healthy records to their queue (issue 21)", () => {
    const sends = policyStatementsOf("order-consumer")
      .filter((s) => asList(s.Action).includes("sqs:SendMessage"))
      .flatMap((s) => asList(s.Resource).map((r: Json) => r["Fn::GetAtt"]?.[0]));
    expect(sends).toHaveLength(2);
    expect(sends.some((id) => /OrdersDlq/.test(id))).toBe(true);
    // The copy of a healthy record on its last receive goes back to the queue the trigger reads.
    const [orderFnId] = functionNamed("order-consumer");
    const [, trigger] = resources("AWS::Lambda::EventSourceMapping").find(
      ([, m]) => m.Properties.FunctionName.Ref === orderFnId,
    )!;
    expect(sends).toContain(trigger.Properties.EventSourceArn["Fn::GetAtt"][0]);
  });
});

describe("Kafka: MSK trigger, retry ladder topics, IAM", () => {
  const clusterArn =
    "arn:aws:kafka:us-east-1:111111111111:cluster/reference-cluster/11111111-2222-3333-4444-555555555555-1";
  const topicArn = (t: string) => `${clusterArn.replace(":cluster/", ":topic/")}/${t}`;
  const groupArn = (g: string) => `${clusterArn.replace(":cluster/", ":group/")}/${g}`;

  it("creates every ladder topic as AWS::MSK::Topic with partitions, replication factor and configs", () => {
    const topics = resources("AWS::MSK::Topic").map(([, t]) => t.Properties);
    expect(topics.map((t) => t.TopicName).sort()).toEqual(
      [
        "order-events",
        "order-events.retry.5s",
        "order-events.retry.1m",
        "order-events.retry.10m",
        "order-events.DLQ",
      ].sort(),
    );
    for (const t of topics) {
      expect(t.ClusterArn).toBe(clusterArn);
      expect(t.PartitionCount).toBe(6);
      expect(t.ReplicationFactor).toBe(3);
      const configs = Buffer.from(t.Configs, "base64").toString();
      expect(configs).toMatch(/^cleanup\.policy=delete$/m);
      expect(configs).toMatch(/^min\.insync\.replicas=2$/m);
      expect(configs).toMatch(
        t.TopicName.endsWith(".DLQ") ? /^retention\.ms=1209600000$/m : /^retention\.ms=604800000$/m,
      );
    }
  });

  it("maps the main and every retry topic in provisioned mode with partial batch responses and the DLQ topic on failure", () => {
    const [paymentId, payment] = functionNamed("payment-consumer");
    const mappings = resources("AWS::Lambda::EventSourceMapping").filter(([, m]) => m.Properties.Topics);
    expect(mappings.map(([, m]) => m.Properties.Topics[0]).sort()).toEqual(
      ["order-events", "order-events.retry.5s", "order-events.retry.1m", "order-events.retry.10m"].sort(),
    );
    const groups = mappings.map(([, m]) => m.Properties.AmazonManagedKafkaEventSourceConfig.ConsumerGroupId);
    expect(new Set(groups).size).toBe(4);
    for (const [, m] of mappings) {
      expect(m.Properties).toMatchObject({
        FunctionName: { Ref: paymentId },
        EventSourceArn: clusterArn,
        StartingPosition: "TRIM_HORIZON",
        BatchSize: 100,
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        ProvisionedPollerConfig: { MinimumPollers: 1, MaximumPollers: 2 },
      });
      expect(m.DependsOn?.some((d: string) => d.startsWith("Topics"))).toBe(true);
      // A record that crashes the function is bisected out and, after a finite number of retries,
      // written by Lambda to the DLQ topic, on every rung; no record age limit (waiting is no failure).
      expect(m.Properties.BisectBatchOnFunctionError).toBe(true);
      expect(m.Properties.DestinationConfig).toEqual({
        OnFailure: { Destination: "kafka://order-events.DLQ" },
      });
      expect(m.Properties.MaximumRecordAgeInSeconds).toBeUndefined();
    }
    // The limit leaves room for the waits of each rung (60 s function: ≤ 55 s of waiting per invocation).
    expect(
      Object.fromEntries(
        mappings.map(([, m]) => [m.Properties.Topics[0], m.Properties.MaximumRetryAttempts]),
      ),
    ).toEqual({
      "order-events": 10,
      "order-events.retry.5s": 11,
      "order-events.retry.1m": 12,
      "order-events.retry.10m": 21,
    });
    const env = payment.Properties.Environment.Variables;
    expect(env[LAMBDA_ENV.kafkaTopic]).toBe("order-events");
    expect(env[LAMBDA_ENV.mskIamAuth]).toBe("true");
    expect(env[LAMBDA_ENV.kafkaBrokers]).toMatch(/:9098/);
    expect(JSON.parse(env[LAMBDA_ENV.kafkaRetryLadder])).toEqual(ladderRuntimeConfig(ORDER_EVENTS_LADDER));
    expect(payment.Properties.VpcConfig.SubnetIds).toHaveLength(2);
    for (const [, fn] of resources("AWS::Lambda::Function"))
      expect(fn.Properties.VpcConfig.SubnetIds).toHaveLength(2);
  });

  it("scopes MSK IAM to the cluster, topic and group ARNs", () => {
    const statements = policyStatementsOf("payment-consumer");
    const actionsOn = (action: string) =>
      statements.filter((s) => asList(s.Action).includes(action)).flatMap((s) => asList(s.Resource));
    expect([...new Set(actionsOn("kafka-cluster:Connect"))]).toEqual([clusterArn]);
    expect(actionsOn("kafka-cluster:ReadData").sort()).toEqual(
      ["order-events", "order-events.retry.5s", "order-events.retry.1m", "order-events.retry.10m"]
        .map(topicArn)
        .sort(),
    );
    expect(actionsOn("kafka-cluster:WriteData").sort()).toEqual(
      ["order-events.retry.5s", "order-events.retry.1m", "order-events.retry.10m", "order-events.DLQ"]
        .map(topicArn)
        .sort(),
    );
    const groups = actionsOn("kafka-cluster:AlterGroup");
    expect(groups).toHaveLength(4);
    expect(groups).toContain(groupArn("payment-consumer"));
    expect(groups).toContain(groupArn("payment-consumer.retry.5s"));
    expect(actionsOn("kafka-cluster:DescribeGroup").sort()).toEqual([...groups].sort());
    expect(actionsOn("kafka:DescribeClusterV2")).toEqual([clusterArn]);
    // No resource-level permission: IAM allows it only on * (issue 34 item 7).
    expect(actionsOn("kafka:GetBootstrapBrokers")).toEqual(["*"]);
    // The idempotent producer (retry ladder, DLQ) needs WriteDataIdempotently on the cluster (issue 21).
    expect(actionsOn("kafka-cluster:WriteDataIdempotently")).toEqual([clusterArn]);
    expect(
      policyStatementsOf("outbox-relay")
        .filter((s) => asList(s.Action).includes("kafka-cluster:WriteDataIdempotently"))
        .flatMap((s) => asList(s.Resource)),
    ).toEqual([clusterArn]);
    // The relay produces to the main topic only.
    const relay = policyStatementsOf("outbox-relay").filter((s) =>
      asList(s.Action).includes("kafka-cluster:WriteData"),
    );
    expect(relay.flatMap((s) => asList(s.Resource))).toEqual([topicArn("order-events")]);
  });

  it("uses Resource * only for the acknowledged actions without resource-level permissions", () => {
    for (const [, p] of resources("AWS::IAM::Policy")) {
      for (const s of p.Properties.PolicyDocument.Statement) {
        const res = asList(s.Resource);
        const wildcard = res.some((r: unknown) => typeof r === "string" && r.includes("*"));
        if (wildcard) {
          expect(res).toEqual(["*"]);
          for (const a of asList(s.Action))
            expect(a).toMatch(/^ec2:|^dynamodb:ListStreams$|^kafka:GetBootstrapBrokers$/);
        }
        for (const a of asList(s.Action)) expect(a).not.toMatch(/\*/);
      }
    }
  });
});

describe("alarms and dashboard", () => {
  const alarmsOf = (metricName: string) =>
    resources("AWS::CloudWatch::Alarm").filter(
      ([, a]) =>
        a.Properties.MetricName === metricName ||
        JSON.stringify(a.Properties.Metrics ?? []).includes(`"MetricName":"${metricName}"`),
    );

  it("alarms on DLQ depth > 0 and the age of the oldest message", () => {
    const dlq = alarmsOf("ApproximateNumberOfMessagesVisible");
    expect(dlq).toHaveLength(2);
    for (const [, a] of dlq) {
      expect(a.Properties).toMatchObject({ Threshold: 0, ComparisonOperator: "GreaterThanThreshold" });
    }
    expect(alarmsOf("ApproximateAgeOfOldestMessage")).toHaveLength(2);
  });

  it("alarms on outbox pending age, duplicate rate, Kafka OffsetLag, errors and throttles", () => {
    expect(alarmsOf("OutboxOldestPendingAge")).toHaveLength(1);
    expect(alarmsOf("DuplicatesSuppressed")).toHaveLength(6);
    expect(alarmsOf("OffsetLag")).toHaveLength(1);
    // Records waiting for an unreachable schema registry are never dead-lettered: only this alarm says so.
    expect(alarmsOf("SchemaRegistryUnavailable")).toHaveLength(1);
    expect(alarmsOf("Errors")).toHaveLength(6);
    expect(alarmsOf("Throttles")).toHaveLength(6);
    ref.template.resourceCountIs("AWS::CloudWatch::Dashboard", 1);
  });
});
