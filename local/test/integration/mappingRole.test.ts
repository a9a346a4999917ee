/**
 * Issue 34 item 7, locally: Lambda checks a function's execution role for what its event source
 * mapping needs when it creates the mapping, and refuses one whose role lacks a permission
 * (InvalidParameterValueException). The local runtime does the same for every kind of mapping: a
 * CDK app with an MSK consumer built by `ConsumerFunction.fromFunction` (its mapping is created:
 * `addMskTrigger` grants what it needs), an MSK mapping wired by hand to a role without
 * ec2:DescribeVpcs, and an SQS mapping wired by hand to a role that may not consume the queue.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Duration, Stack } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { ConsumerFunction, type MskClusterRef, QueueWithDlq } from "reliable-consumers/cdk";
import { type LocalRuntime, startLocalRuntime } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { names } from "../../../test/support/names.ts";

const name = names(import.meta.url);
const outdir = mkdtempSync(join(tmpdir(), "mapping-role-cdk-"));
const CLUSTER = "arn:aws:kafka:us-east-1:111111111111:cluster/c/1";
let runtime: LocalRuntime;

/** What AWSLambdaMSKExecutionRole allows, but ec2:DescribeVpcs. */
const MSK_MAPPING_BUT_DESCRIBE_VPCS = [
  "kafka:DescribeClusterV2",
  "kafka:GetBootstrapBrokers",
  "ec2:CreateNetworkInterface",
  "ec2:DescribeNetworkInterfaces",
  "ec2:DeleteNetworkInterface",
  "ec2:DescribeSubnets",
  "ec2:DescribeSecurityGroups",
];

function synthApp(): string {
  const app = new App({ outdir, context: { "aws:cdk:enable-path-metadata": true } });
  const stack = new Stack(app, "MappingRole");
  const vpc = ec2.Vpc.fromVpcAttributes(stack, "Vpc", {
    vpcId: "vpc-1",
    availabilityZones: ["us-east-1a"],
    privateSubnetIds: ["subnet-1"],
  });
  const securityGroup = ec2.SecurityGroup.fromSecurityGroupId(stack, "Sg", "sg-0123456789abcdef0");
  const cluster: MskClusterRef = {
    clusterArn: CLUSTER,
    bootstrapBrokers: "b-1.c.abc.c1.kafka.us-east-1.amazonaws.com:9098",
    kind: "provisioned",
    vpc,
    subnets: { subnets: vpc.privateSubnets },
    securityGroup,
  };
  const fn = (id: string, role?: iam.IRole) =>
    new lambda.Function(stack, id, {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: "index.handler",
      code: lambda.Code.fromInline("exports.handler = async () => ({ batchItemFailures: [] });"),
      timeout: Duration.seconds(30),
      vpc,
      vpcSubnets: cluster.subnets,
      securityGroups: [securityGroup],
      ...(role ? { role } : {}),
    });
  // A function built another way: its role is CDK's, with the VPC execution policy only.
  ConsumerFunction.fromFunction(stack, "Mine", fn("MineFn")).addMskTrigger(cluster, {
    topic: name("events"),
    retryDelaysSeconds: [60],
    partitions: 1,
  });
  // Wired by hand, to a role with everything the MSK mapping needs but ec2:DescribeVpcs.
  const noVpcs = new iam.Role(stack, "NoVpcsRole", {
    assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
  });
  noVpcs.addToPolicy(new iam.PolicyStatement({ actions: MSK_MAPPING_BUT_DESCRIBE_VPCS, resources: ["*"] }));
  noVpcs.addToPolicy(
    new iam.PolicyStatement({
      actions: ["kafka-cluster:Connect", "kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"],
      resources: ["*"],
    }),
  );
  const handWired = fn("HandWired", noVpcs);
  new lambda.CfnEventSourceMapping(stack, "HandWiredMapping", {
    functionName: handWired.functionName,
    eventSourceArn: CLUSTER,
    topics: [name("events")],
    startingPosition: "TRIM_HORIZON",
  });
  // An SQS mapping whose function may not consume the queue.
  const jobs = new QueueWithDlq(stack, "Jobs", { consumerTimeout: Duration.seconds(30) });
  const unread = fn("Unread");
  new lambda.CfnEventSourceMapping(stack, "UnreadMapping", {
    functionName: unread.functionName,
    eventSourceArn: jobs.queue.queueArn,
  });
  return app.synth().directory;
}

beforeAll(async () => {
  runtime = await startLocalRuntime({
    cdkOut: synthApp(),
    namePrefix: name(""),
    startTriggers: false,
  });
}, 180_000);

afterAll(async () => {
  await runtime?.stop();
  rmSync(outdir, { recursive: true, force: true });
});

const refusedOf = (prefix: string) =>
  runtime.app.report.refused?.find((r) => r.logicalId.startsWith(prefix))?.detail;
const mappingOf = (prefix: string) => runtime.app.mappings.find((m) => m.logicalId.startsWith(prefix));

describe("the local runtime checks a mapping's execution role as Lambda does when it creates the mapping", () => {
  it("refuses an MSK mapping whose role lacks ec2:DescribeVpcs, with Lambda's error, and never polls it", () => {
    expect(refusedOf("HandWiredMapping")).toBe(
      "InvalidParameterValueException: The function execution role does not have permissions to call DescribeVpcs on EC2",
    );
    expect(mappingOf("HandWiredMapping")).toBeUndefined();
    const fnName = runtime.findFunction("HandWired").name;
    const denied = runtime.denials.all().filter((d) => d.functionName === fnName);
    expect(denied.map((d) => `${d.action} on ${d.resource}`)).toEqual(["ec2:DescribeVpcs on *"]);
  });

  it("creates the mapping of ConsumerFunction.fromFunction(...).addMskTrigger(...): its role has what the mapping needs", () => {
    expect(refusedOf("MineMsk")).toBeUndefined();
    expect(mappingOf("MineMsk")?.kind).toBe("kafka");
  });

  it("refuses an SQS mapping whose role may not receive from the queue, with Lambda's error", () => {
    expect(refusedOf("UnreadMapping")).toBe(
      "InvalidParameterValueException: The function execution role does not have permissions to call ReceiveMessage on SQS",
    );
    expect(mappingOf("UnreadMapping")).toBeUndefined();
  });
});
