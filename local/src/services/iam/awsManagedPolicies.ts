import type { PolicyDocument } from "./accessModel.ts";

/**
 * The AWS managed policies a Lambda consumer's role commonly names, as AWS publishes them today.
 * Offline synth gives only their ARNs, so their documents live here; a role naming any other
 * managed policy gets a note in the report, and that policy grants nothing locally.
 */
const LOGS = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"];
const ENI = ["ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface"];

const allow = (actions: string[]): PolicyDocument => ({
  Version: "2012-10-17",
  Statement: [{ Effect: "Allow", Action: actions, Resource: "*" }],
});

export const AWS_MANAGED_POLICIES: Readonly<Record<string, PolicyDocument>> = {
  AWSLambdaBasicExecutionRole: allow(LOGS),
  AWSLambdaSQSQueueExecutionRole: allow([
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    ...LOGS,
  ]),
  AWSLambdaDynamoDBExecutionRole: allow([
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
    ...LOGS,
  ]),
  AWSLambdaMSKExecutionRole: allow([
    "kafka:DescribeCluster",
    "kafka:DescribeClusterV2",
    "kafka:GetBootstrapBrokers",
    ...ENI,
    "ec2:DescribeVpcs",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    ...LOGS,
  ]),
  AWSLambdaVPCAccessExecutionRole: allow([
    ...LOGS,
    ...ENI,
    "ec2:DescribeSubnets",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
  ]),
  AWSXRayDaemonWriteAccess: allow([
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "xray:GetSamplingStatisticSummaries",
  ]),
};

/** `arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole` → its document, if known. */
export function awsManagedPolicy(arn: string): { name: string; document: PolicyDocument } | undefined {
  const match = /^arn:[^:]+:iam::aws:policy\/(?:.*\/)?([^/]+)$/.exec(arn);
  const name = match?.[1];
  const document = name ? AWS_MANAGED_POLICIES[name] : undefined;
  return name && document ? { name, document } : undefined;
}
