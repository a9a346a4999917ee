import { Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../infra/app.ts";
import { CONTEXT_DEFAULTS } from "../../infra/config.ts";
import { ReferenceServiceStack, STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { ConsumerFunction } from "../../lib/cdk/consumerFunction.ts";
import { DedupTable } from "../../lib/cdk/dedupTable.ts";
import type { MskClusterRef } from "../../lib/cdk/mskCluster.ts";
import { QueueWithDlq } from "../../lib/cdk/queueWithDlq.ts";
import { findingsOf, testApp } from "./synthHelpers.ts";

// Small stacks, no bundling: each rule must fail synth with a message that says what to change.
const consumer = (stack: Stack, id: string, timeout: Duration) =>
  new ConsumerFunction(stack, id, { entry: STUB_ENTRY, timeout });

describe("visibility timeout vs. consumer timeout", () => {
  it("derives 6 × timeout + batching window when the visibility timeout is not given", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.seconds(30),
      maxBatchingWindow: Duration.seconds(10),
    });
    consumer(stack, "C", Duration.seconds(30)).addSqsTrigger(q, { maxBatchingWindow: Duration.seconds(10) });
    Template.fromStack(stack).hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 190 });
  });

  it("fails synth when the visibility timeout is too short", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", { visibilityTimeout: Duration.seconds(60) });
    expect(() => consumer(stack, "C", Duration.seconds(30)).addSqsTrigger(q)).toThrow(
      /visibility timeout of 1m \(60s\), but its consumer "C" needs at least 6 × function timeout \(30s\) \+ batching window \(0s\) = 3m \(180s\)/,
    );
  });

  it("counts the batching window", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    expect(() =>
      consumer(stack, "C", Duration.seconds(30)).addSqsTrigger(q, {
        batchSize: 100,
        maxBatchingWindow: Duration.seconds(5),
      }),
    ).toThrow(/= 3m 5s \(185s\)/);
  });

  it("catches a function timeout raised after the queue was sized", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    expect(() => consumer(stack, "C", Duration.seconds(31)).addSqsTrigger(q)).toThrow(
      /needs at least .* \(186s\)/,
    );
  });

  it("fails the reference stack when its orders queue is set too short", () => {
    expect(
      () =>
        new ReferenceServiceStack(testApp(), "R", {
          context: CONTEXT_DEFAULTS,
          ordersQueue: { visibilityTimeout: Duration.seconds(120) },
        }),
    ).toThrow(/Queue "R\/Orders" has a visibility timeout of 2m \(120s\)/);
  });
});

describe("dedup window vs. retry paths", () => {
  it("fails synth when the dedup TTL is shorter than a queue's retention it must cover", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const dedup = new DedupTable(stack, "Dedup", { window: Duration.days(3) });
    const q = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.seconds(30),
      retentionPeriod: Duration.days(4),
      dlqRetentionPeriod: Duration.days(4),
    });
    // Declared before the trigger: the check runs at synth, so later triggers still count.
    const c = consumer(stack, "C", Duration.seconds(30)).useDedupWindow(dedup);
    c.addSqsTrigger(q);
    expect(() => app.synth()).toThrow(
      /Dedup table "S\/Dedup" remembers keys for 3d \(259200s\)[\s\S]*- C: queue Q: max\(retention, DLQ retention\) with retention 4d, DLQ 4d = 4d \(345600s\)/,
    );
  });

  it("passes when the window is longer", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const dedup = new DedupTable(stack, "Dedup", { window: Duration.days(5) });
    const q = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.seconds(30),
      retentionPeriod: Duration.days(4),
      dlqRetentionPeriod: Duration.days(4),
    });
    consumer(stack, "C", Duration.seconds(30)).useDedupWindow(dedup).addSqsTrigger(q);
    expect(() => app.synth()).not.toThrow();
  });

  it("fails synth when a Kafka retry ladder plus topic retention outlives the window", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const vpc = ec2.Vpc.fromVpcAttributes(stack, "Vpc", {
      vpcId: "vpc-1",
      availabilityZones: ["us-east-1a"],
      privateSubnetIds: ["subnet-1"],
    });
    const cluster: MskClusterRef = {
      clusterArn: CONTEXT_DEFAULTS.mskClusterArn,
      bootstrapBrokers: "b-1:9098",
      kind: "provisioned",
      vpc,
      subnets: { subnets: vpc.privateSubnets },
      securityGroup: ec2.SecurityGroup.fromSecurityGroupId(stack, "Sg", "sg-1"),
    };
    const dedup = new DedupTable(stack, "Dedup"); // 15 days
    new ConsumerFunction(stack, "K", {
      entry: STUB_ENTRY,
      vpc,
      vpcSubnets: cluster.subnets,
      securityGroups: [cluster.securityGroup],
    })
      .useDedupWindow(dedup)
      .addMskTrigger(cluster, {
        topic: "events",
        retryDelaysSeconds: [60, 3600],
        partitions: 3,
        deadLetterRetentionSeconds: 15 * 86_400,
      });
    expect(() => app.synth()).toThrow(/remembers keys for 15d[\s\S]*- K: topic events: retry ladder 1m → 1h/);
  });

  it("fails the reference stack when its dedup window is shorter than the Kafka DLQ retention", () => {
    const app = testApp();
    new ReferenceServiceStack(app, "R", { context: CONTEXT_DEFAULTS, dedupWindow: Duration.days(10) });
    expect(() => app.synth()).toThrow(/Dedup table "R\/Dedup" remembers keys for 10d[\s\S]*payment-consumer/);
  });
});

describe("other synth-time guards", () => {
  it("refuses a missing handler unless stubs are allowed", () => {
    expect(
      () =>
        new ReferenceServiceStack(testApp(), "R", {
          context: { ...CONTEXT_DEFAULTS, allowMissingHandlers: false },
          entries: { "payment-consumer": "/nonexistent/handler.ts" },
        }),
    ).toThrow(/payment-consumer: handler \/nonexistent\/handler.ts does not exist/);
  });

  it("refuses an MSK consumer outside a VPC and a DLQ that expires before its queue", () => {
    const stack = new Stack(testApp(), "S");
    expect(
      () =>
        new QueueWithDlq(stack, "Q", {
          consumerTimeout: Duration.seconds(30),
          retentionPeriod: Duration.days(7),
          dlqRetentionPeriod: Duration.days(1),
        }),
    ).toThrow(/DLQ retention \(1d\) is shorter than the queue's \(7d\)/);
    expect(() => new QueueWithDlq(stack, "Q2", {})).toThrow(/give consumerTimeout/);
  });
});

describe("variants of the reference app", () => {
  it("MSK Serverless: topics through the admin custom resource, no AWS::MSK::Topic, nag-clean", () => {
    const { app, stack } = buildApp(testApp({ mskClusterKind: "serverless" }));
    app.synth();
    expect(findingsOf(new AwsSolutionsChecks().validateScope(stack))).toEqual([]);
    const t = Template.fromStack(stack);
    t.resourceCountIs("AWS::MSK::Topic", 0);
    const topics = Object.values(t.findResources("Custom::KafkaTopic")).map((r) => r.Properties.Topic);
    expect(topics.map((x) => x.Name).sort()).toEqual([
      "order-events",
      "order-events.DLQ",
      "order-events.retry.10m",
      "order-events.retry.1m",
      "order-events.retry.5s",
    ]);
    for (const topic of topics) {
      expect(topic.Partitions).toBe(6);
      expect(topic.Configs["min.insync.replicas"]).toBeUndefined(); // fixed by MSK Serverless
      expect(topic.Configs["retention.ms"]).toBeDefined();
    }
    const admin = Object.entries(t.findResources("AWS::IAM::Policy")).find(([id]) =>
      id.startsWith("TopicsAdmin"),
    )!;
    const actions = admin[1].Properties.PolicyDocument.Statement.flatMap(
      (s: { Action: string[] }) => s.Action,
    );
    expect(actions).toEqual(
      expect.arrayContaining(["kafka-cluster:CreateTopic", "kafka-cluster:AlterTopic"]),
    );
  });

  it("createMskCluster: a provisioned IAM/TLS cluster in a new VPC with endpoints, nag-clean", () => {
    const { app, stack } = buildApp(testApp({ createMskCluster: true }));
    app.synth();
    expect(findingsOf(new AwsSolutionsChecks().validateScope(stack))).toEqual([]);
    const t = Template.fromStack(stack);
    t.hasResourceProperties("AWS::MSK::Cluster", {
      KafkaVersion: "3.6.0",
      ClientAuthentication: { Sasl: { Iam: { Enabled: true } }, Unauthenticated: { Enabled: false } },
      EncryptionInfo: { EncryptionInTransit: { ClientBroker: "TLS", InCluster: true } },
    });
    t.resourceCountIs("AWS::EC2::NatGateway", 0);
    t.resourceCountIs("AWS::EC2::VPCEndpoint", 5);
    t.resourceCountIs("AWS::MSK::Topic", 5);
  });
});
