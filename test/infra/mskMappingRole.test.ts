/**
 * Issue 34 item 7: an MSK event source mapping needs its function's role to describe the cluster,
 * read its brokers and manage ENIs in its VPC (the Lambda developer guide's required permissions,
 * the AWSLambdaMSKExecutionRole policy). `addMskTrigger` grants them wherever the function came
 * from: a `ConsumerFunction` in a VPC, and `ConsumerFunction.fromFunction` of a function whose VPC
 * role (CDK's AWSLambdaVPCAccessExecutionRole) has neither ec2:DescribeVpcs nor
 * ec2:DescribeSecurityGroups.
 */
import { Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { ConsumerFunction, type MskClusterRef } from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";
import { CONTEXT_DEFAULTS } from "../../infra/config.ts";
import { STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { AWS_MANAGED_POLICIES } from "../../local/src/services/iam/awsManagedPolicies.ts";
import { testApp } from "./synthHelpers.ts";

const ladder = { topic: "events", retryDelaysSeconds: [60], partitions: 3 };

/** What the mapping needs without a resource, and on the cluster (the guide's required list). */
const UNSCOPED = [
  "kafka:GetBootstrapBrokers",
  "ec2:CreateNetworkInterface",
  "ec2:DescribeNetworkInterfaces",
  "ec2:DeleteNetworkInterface",
  "ec2:DescribeVpcs",
  "ec2:DescribeSubnets",
  "ec2:DescribeSecurityGroups",
];

function clusterIn(stack: Stack): MskClusterRef {
  const vpc = ec2.Vpc.fromVpcAttributes(stack, "Vpc", {
    vpcId: "vpc-1",
    availabilityZones: ["us-east-1a"],
    privateSubnetIds: ["subnet-1"],
  });
  return {
    clusterArn: CONTEXT_DEFAULTS.mskClusterArn,
    bootstrapBrokers: "b-1:9098",
    kind: "provisioned",
    vpc,
    subnets: { subnets: vpc.privateSubnets },
    securityGroup: ec2.SecurityGroup.fromSecurityGroupId(stack, "Sg", "sg-1"),
  };
}

type Statement = { Action: string | string[]; Resource: unknown };
const asList = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);

/** The statements of a managed policy a role names (`…:iam::aws:policy/service-role/<name>`), as AWS publishes it. */
function managedStatements(arn: unknown): Statement[] {
  const name = JSON.stringify(arn).match(/:iam::aws:policy\/(?:[^"/]+\/)*([^"/]+)"/)?.[1];
  const doc = name ? AWS_MANAGED_POLICIES[name] : undefined;
  if (!doc) throw new Error(`unknown managed policy ${JSON.stringify(arn)}`);
  return doc.Statement as Statement[];
}

/** Every action the stack's roles allow (inline and AWS managed policies), with the resources it is allowed on. */
function allowedOn(stack: Stack): Map<string, unknown[]> {
  const template = Template.fromStack(stack);
  const statements: Statement[] = [];
  for (const policy of Object.values(template.findResources("AWS::IAM::Policy")))
    statements.push(...(policy.Properties.PolicyDocument.Statement as Statement[]));
  for (const role of Object.values(template.findResources("AWS::IAM::Role")))
    for (const arn of role.Properties.ManagedPolicyArns ?? []) statements.push(...managedStatements(arn));
  const out = new Map<string, unknown[]>();
  for (const s of statements)
    for (const a of asList(s.Action)) out.set(a, [...(out.get(a) ?? []), ...asList(s.Resource)]);
  return out;
}

function expectMappingGrants(stack: Stack): void {
  const allowed = allowedOn(stack);
  expect(UNSCOPED.filter((action) => !allowed.get(action)?.includes("*"))).toEqual([]);
  expect(allowed.get("kafka:DescribeClusterV2")).toContain(CONTEXT_DEFAULTS.mskClusterArn);
}

describe("addMskTrigger grants what Lambda checks the role for when it creates the mapping", () => {
  it("ConsumerFunction.fromFunction of a VPC function: ec2:DescribeVpcs, ec2:DescribeSecurityGroups and the rest", () => {
    const stack = new Stack(testApp(), "S");
    const cluster = clusterIn(stack);
    const fn = new lambda.Function(stack, "Fn", {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: "index.handler",
      code: lambda.Code.fromInline("exports.handler = async () => ({})"),
      timeout: Duration.seconds(30),
      vpc: cluster.vpc,
      vpcSubnets: cluster.subnets,
      securityGroups: [cluster.securityGroup],
    });
    ConsumerFunction.fromFunction(stack, "Mine", fn).addMskTrigger(cluster, ladder);
    expectMappingGrants(stack);
  });

  it("a ConsumerFunction in the cluster's VPC", () => {
    const stack = new Stack(testApp(), "S");
    const cluster = clusterIn(stack);
    new ConsumerFunction(stack, "P", {
      entry: STUB_ENTRY,
      vpc: cluster.vpc,
      vpcSubnets: cluster.subnets,
      securityGroups: [cluster.securityGroup],
    }).addMskTrigger(cluster, ladder);
    expectMappingGrants(stack);
  });
});
