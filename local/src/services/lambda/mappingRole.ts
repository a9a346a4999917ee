/**
 * What Lambda checks of a function's execution role when it creates an event source mapping, and
 * how it refuses one whose role lacks a permission (InvalidParameterValueException, in Lambda's own
 * words). The same for every kind of mapping the local runtime runs; a refused mapping never polls,
 * as on AWS it never exists. Pure but for the evaluator.
 *
 * - SQS: `sqs:ReceiveMessage`, `sqs:DeleteMessage`, `sqs:GetQueueAttributes` on the queue (the
 *   AWSLambdaSQSQueueExecutionRole policy); Lambda answers "The function execution role does not
 *   have permissions to call ReceiveMessage on SQS".
 * - DynamoDB Streams: read on the stream; Lambda answers "Cannot access stream <arn>. Please ensure
 *   the role can perform the GetRecords, GetShardIterator, DescribeStream, and ListStreams Actions
 *   on your stream in IAM." `dynamodb:ListStreams` takes no resource and is not checked here: the
 *   pollers read one known stream.
 * - Amazon MSK: the Lambda developer guide's required permissions ("Configuring Lambda permissions
 *   for Amazon MSK event source mappings", the AWSLambdaMSKExecutionRole policy):
 *   `kafka:DescribeClusterV2` (or `kafka:DescribeCluster`) on the cluster, `kafka:GetBootstrapBrokers`,
 *   and the VPC permissions `ec2:CreateNetworkInterface`, `ec2:DescribeNetworkInterfaces`,
 *   `ec2:DescribeVpcs`, `ec2:DeleteNetworkInterface`, `ec2:DescribeSubnets`,
 *   `ec2:DescribeSecurityGroups` (the last seven take no resource). Lambda's wording is taken to be
 *   the one it uses for the other execution-role checks, "The function execution role does not have
 *   permissions to call DescribeVpcs on EC2". A self-managed Kafka source is not checked.
 * - Kinesis: the AWSLambdaKinesisExecutionRole policy ("Lambda execution role permissions" of
 *   "Using Lambda with Kinesis Data Streams"): `kinesis:DescribeStream`,
 *   `kinesis:DescribeStreamSummary`, `kinesis:GetRecords`, `kinesis:GetShardIterator`,
 *   `kinesis:ListShards` on the stream (`kinesis:ListStreams` takes no resource and is not checked:
 *   the poller reads one known stream), and for enhanced fan-out `kinesis:SubscribeToShard` and
 *   `kinesis:DescribeStreamConsumer` on the consumer. Lambda's wording is taken to be its
 *   execution-role wording, "…to call GetRecords on Kinesis". With an SQS on-failure destination,
 *   `sqs:SendMessage` on the queue (Lambda sends the invocation record as the role): "The provided
 *   execution role does not have permissions to call SendMessage on SQS".
 */

import type { DenialLog } from "../../enforcement/denials.ts";
import type { LocalApp, LocalEventSourceMapping, OnFailureDestination } from "../../runtime/model.ts";
import type { FunctionPrincipal } from "../iam/accessModel.ts";
import { grantAdvice } from "../iam/grantAdvice.ts";
import type { AuthzRequest, IamEvaluator } from "../iam/iamEvaluator.ts";

/** One permission a mapping needs: any of `actions` on `resource`. */
export interface MappingPermission {
  /** The first is the one named in messages. */
  readonly actions: readonly [string, ...string[]];
  readonly resource: string;
}

/** The permissions a mapping needs of its function's role, and Lambda's message for a missing one. */
export interface MappingRoleRule {
  readonly permissions: readonly MappingPermission[];
  readonly messageFor: (missing: MappingPermission) => string;
}

/** A mapping Lambda would not create: its code and message, and every permission its role lacks. */
export interface MappingRefusal {
  readonly code: "InvalidParameterValueException";
  readonly message: string;
  readonly missing: readonly MappingPermission[];
}

const one = (action: string, resource: string): MappingPermission => ({ actions: [action], resource });

/** `sqs:ReceiveMessage` → "…to call ReceiveMessage on SQS". */
const callMessage = (service: string) => (missing: MappingPermission) =>
  `The function execution role does not have permissions to call ${missing.actions[0].split(":")[1]} on ${service}`;

const KINESIS_READ_ACTIONS = [
  "kinesis:DescribeStream",
  "kinesis:DescribeStreamSummary",
  "kinesis:GetRecords",
  "kinesis:GetShardIterator",
  "kinesis:ListShards",
];

/** The on-failure destination's send permission: Lambda sends the invocation record as the role. */
const destinationPermissions = (m: { onFailure?: OnFailureDestination }): MappingPermission[] =>
  m.onFailure?.kind === "sqs" ? [one("sqs:SendMessage", m.onFailure.queue.arn)] : [];

const MSK_VPC_ACTIONS = [
  "ec2:CreateNetworkInterface",
  "ec2:DescribeNetworkInterfaces",
  "ec2:DescribeVpcs",
  "ec2:DeleteNetworkInterface",
  "ec2:DescribeSubnets",
  "ec2:DescribeSecurityGroups",
];

/** What Lambda checks of the role for `m`; `undefined` for a source it checks nothing of. */
export function mappingRoleRule(m: LocalEventSourceMapping): MappingRoleRule | undefined {
  switch (m.kind) {
    case "sqs":
      return {
        permissions: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"].map((a) =>
          one(a, m.queue.arn),
        ),
        messageFor: callMessage("SQS"),
      };
    case "kinesis": {
      const kinesis = callMessage("Kinesis");
      return {
        permissions: [
          ...KINESIS_READ_ACTIONS.map((a) => one(a, m.streamArn)),
          ...(m.consumerArn
            ? ["kinesis:SubscribeToShard", "kinesis:DescribeStreamConsumer"].map((a) =>
                one(a, m.consumerArn!),
              )
            : []),
          ...destinationPermissions(m),
        ],
        messageFor: (missing) =>
          missing.actions[0] === "sqs:SendMessage"
            ? "The provided execution role does not have permissions to call SendMessage on SQS"
            : kinesis(missing),
      };
    }
    case "dynamodb":
      return {
        permissions: ["dynamodb:DescribeStream", "dynamodb:GetShardIterator", "dynamodb:GetRecords"].map(
          (a) => one(a, m.streamArn),
        ),
        messageFor: () =>
          `Cannot access stream ${m.streamArn}. Please ensure the role can perform the GetRecords, ` +
          "GetShardIterator, DescribeStream, and ListStreams Actions on your stream in IAM.",
      };
    case "kafka": {
      if (!m.clusterArn.startsWith("arn:")) return undefined;
      const ec2 = callMessage("EC2");
      const kafka = callMessage("Kafka");
      return {
        permissions: [
          { actions: ["kafka:DescribeClusterV2", "kafka:DescribeCluster"], resource: m.clusterArn },
          one("kafka:GetBootstrapBrokers", "*"),
          ...MSK_VPC_ACTIONS.map((a) => one(a, "*")),
        ],
        messageFor: (missing) => (missing.actions[0].startsWith("ec2:") ? ec2(missing) : kafka(missing)),
      };
    }
  }
}

/** Whether `principal`'s role allows one of the permission's actions. */
async function allows(
  evaluator: IamEvaluator,
  principal: FunctionPrincipal,
  p: MappingPermission,
): Promise<boolean> {
  for (const action of p.actions) {
    const request: AuthzRequest = { action, resource: p.resource };
    if ((await evaluator.authorize(principal, request)).allowed) return true;
  }
  return false;
}

/** Lambda's refusal of `m`, if its function's role lacks what the mapping needs. */
export async function mappingRefusal(
  m: LocalEventSourceMapping,
  principal: FunctionPrincipal,
  evaluator: IamEvaluator,
): Promise<MappingRefusal | undefined> {
  const rule = mappingRoleRule(m);
  if (!rule) return undefined;
  const missing: MappingPermission[] = [];
  for (const p of rule.permissions) if (!(await allows(evaluator, principal, p))) missing.push(p);
  const first = missing[0];
  return first
    ? { code: "InvalidParameterValueException", message: rule.messageFor(first), missing }
    : undefined;
}

/**
 * Refuses, as Lambda would at creation, every mapping of `app` whose function's role lacks what it
 * needs: it is taken out of `app.mappings` (so no poller starts) and out of the report's `created`,
 * listed under `refused` with Lambda's message, and each missing permission is recorded as a denial
 * with the grant that would allow it. Returns the refused mappings.
 */
export async function refuseUngrantedMappings(
  app: LocalApp,
  enforcement: {
    principal(functionName: string): FunctionPrincipal | undefined;
    evaluator(): IamEvaluator | undefined;
    readonly denials: DenialLog;
  },
  now: () => number = Date.now,
): Promise<LocalEventSourceMapping[]> {
  const evaluator = enforcement.evaluator();
  if (!evaluator) return [];
  const refused: LocalEventSourceMapping[] = [];
  for (const m of [...app.mappings]) {
    const principal = enforcement.principal(m.functionName);
    const refusal = principal ? await mappingRefusal(m, principal, evaluator) : undefined;
    if (!refusal) continue;
    refused.push(m);
    app.mappings.splice(app.mappings.indexOf(m), 1);
    const created = app.report.created.findIndex((e) => e.logicalId === m.logicalId);
    if (created >= 0) app.report.created.splice(created, 1);
    app.report.refused.push({
      logicalId: m.logicalId,
      type: "AWS::Lambda::EventSourceMapping",
      detail: `${refusal.code}: ${refusal.message}`,
    });
    for (const p of refusal.missing)
      enforcement.denials.record({
        at: now(),
        functionName: m.functionName,
        action: p.actions[0],
        resource: p.resource,
        message: `${refusal.code}: ${refusal.message}`,
        advice: grantAdvice(p.actions[0], p.resource, app.access.constructPaths.get(p.resource)),
      });
  }
  return refused;
}
