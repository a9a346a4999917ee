/**
 * Issue 35: every mapping the triggers create turns on Lambda's event source mapping metrics
 * (`MetricsConfig`): EventCount on SQS (and on streams, test/infra/streamTriggers.test.ts), and
 * EventCount with ErrorCount on MSK, where Lambda also counts deserialization and schema-registry
 * errors (EventSourceMappingMetricsConfig, Lambda API reference).
 */
import { Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { ConsumerFunction, QueueWithDlq } from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";
import { CONTEXT_DEFAULTS } from "../../infra/config.ts";
import { STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { testApp } from "./synthHelpers.ts";

const metricsOf = (stack: Stack) =>
  Object.values(Template.fromStack(stack).findResources("AWS::Lambda::EventSourceMapping")).map(
    (m) => (m as { Properties: { MetricsConfig?: unknown } }).Properties.MetricsConfig,
  );

describe("event source mapping metrics", () => {
  it("are on for an SQS trigger: EventCount", () => {
    const stack = new Stack(testApp(), "S");
    const queue = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    new ConsumerFunction(stack, "C", { entry: STUB_ENTRY, timeout: Duration.seconds(30) }).addSqsTrigger(
      queue,
    );
    expect(metricsOf(stack)).toEqual([{ Metrics: ["EventCount"] }]);
  });

  it("are on for every mapping of an MSK trigger: EventCount and ErrorCount", () => {
    const stack = new Stack(testApp(), "S");
    const vpc = ec2.Vpc.fromVpcAttributes(stack, "Vpc", {
      vpcId: "vpc-1",
      availabilityZones: ["us-east-1a"],
      privateSubnetIds: ["subnet-1"],
    });
    const securityGroup = ec2.SecurityGroup.fromSecurityGroupId(stack, "Sg", "sg-1");
    const cluster = {
      clusterArn: CONTEXT_DEFAULTS.mskClusterArn,
      bootstrapBrokers: "b-1:9098",
      kind: "provisioned" as const,
      vpc,
      subnets: { subnets: vpc.privateSubnets },
      securityGroup,
    };
    new ConsumerFunction(stack, "P", {
      entry: STUB_ENTRY,
      vpc,
      vpcSubnets: cluster.subnets,
      securityGroups: [securityGroup],
    }).addMskTrigger(cluster, { topic: "events", retryDelaysSeconds: [60], partitions: 3 });
    const metrics = metricsOf(stack);
    expect(metrics).toHaveLength(2); // the main topic and its one retry topic
    for (const m of metrics) expect(m).toEqual({ Metrics: ["EventCount", "ErrorCount"] });
  });
});
