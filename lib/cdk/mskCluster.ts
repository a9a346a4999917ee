import { Arn, ArnFormat, Fn, Stack, Token } from "aws-cdk-lib";
import type * as ec2 from "aws-cdk-lib/aws-ec2";
import * as iam from "aws-cdk-lib/aws-iam";
import type { IConstruct } from "constructs";

/** An MSK Provisioned or MSK Serverless cluster. */
export type MskClusterKind = "provisioned" | "serverless";

/**
 * An MSK cluster as the constructs need it: referenced through context values (nothing is looked
 * up at synth, so `cdk synth` runs offline) or created by the stack.
 */
export interface MskClusterRef {
  /** The cluster's ARN (scopes the `kafka-cluster:*` grants, names the event source). */
  readonly clusterArn: string;
  /** Comma-separated `host:port` bootstrap brokers (SASL/IAM: port 9098). */
  readonly bootstrapBrokers: string;
  /** MSK Provisioned or MSK Serverless: how topics are made (`AWS::MSK::Topic` or a custom resource). */
  readonly kind: MskClusterKind;
  /** SASL/IAM client authentication. @default true */
  readonly iamAuth?: boolean;
  /** The VPC the brokers are in; functions that reach them run in it. */
  readonly vpc: ec2.IVpc;
  /** The subnets of that VPC the functions run in. */
  readonly subnets: ec2.SubnetSelection;
  /** A security group that can reach the brokers (and that they allow in). */
  readonly securityGroup: ec2.ISecurityGroup;
}

/** `arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>` → the same for `topic/…/<topic>` or `group/…/<group>`. */
function childArn(scope: IConstruct, clusterArn: string, kind: "topic" | "group", name: string): string {
  if (!Token.isUnresolved(clusterArn)) {
    const match = /^(arn:[^:]+:kafka:[^:]*:[^:]*:)cluster\/([^/]+\/[^/]+)$/.exec(clusterArn);
    if (!match) throw new Error(`not an MSK cluster ARN: ${clusterArn}`);
    return `${match[1]}${kind}/${match[2]}/${name}`;
  }
  // A cluster created in the same app: build the ARN from its parts at deploy time.
  const parts = Arn.split(clusterArn, ArnFormat.SLASH_RESOURCE_NAME);
  const resource = Fn.select(5, Fn.split(":", clusterArn)); // cluster/<name>/<uuid>
  const clusterName = Fn.select(1, Fn.split("/", resource));
  const clusterUuid = Fn.select(2, Fn.split("/", resource));
  return Stack.of(scope).formatArn({
    service: "kafka",
    resource: kind,
    resourceName: `${clusterName}/${clusterUuid}/${name}`,
    region: parts.region,
    account: parts.account,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
}

/** The ARN of a topic of the cluster (for IAM). */
export const mskTopicArn = (scope: IConstruct, c: MskClusterRef, topic: string) =>
  childArn(scope, c.clusterArn, "topic", topic);
/** The ARN of a consumer group of the cluster (for IAM). */
export const mskGroupArn = (scope: IConstruct, c: MskClusterRef, group: string) =>
  childArn(scope, c.clusterArn, "group", group);

/**
 * The actions an MSK event source mapping needs of its function's role that take no resource
 * (`MskGrants.eventSourceMapping`): the brokers, and the VPC networking of its pollers.
 */
const MSK_MAPPING_UNSCOPED_ACTIONS = [
  "kafka:GetBootstrapBrokers",
  "ec2:CreateNetworkInterface",
  "ec2:DescribeNetworkInterfaces",
  "ec2:DeleteNetworkInterface",
  "ec2:DescribeVpcs",
  "ec2:DescribeSubnets",
  "ec2:DescribeSecurityGroups",
] as const;

/**
 * Least-privilege MSK IAM grants (`kafka-cluster:*` data-plane actions), scoped to the cluster,
 * topic and group ARNs. No wildcards.
 */
export const MskGrants = {
  /** Consume `topics` as `groups` (what a Lambda MSK event source mapping does with IAM auth). */
  consume(
    grantee: iam.IGrantable,
    scope: IConstruct,
    c: MskClusterRef,
    topics: readonly string[],
    groups: readonly string[],
  ): void {
    const p = grantee.grantPrincipal;
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["kafka-cluster:Connect", "kafka-cluster:DescribeClusterDynamicConfiguration"],
        resources: [c.clusterArn],
      }),
    );
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"],
        resources: topics.map((t) => mskTopicArn(scope, c, t)),
      }),
    );
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"],
        resources: groups.map((g) => mskGroupArn(scope, c, g)),
      }),
    );
  },

  /**
   * Produce to `topics` (relay, retry ladder, dead-letter topic). The library's producer is
   * idempotent (kafkajs calls InitProducerId in `connect()`), and MSK checks that as
   * `kafka-cluster:WriteDataIdempotently` on the cluster; WriteData on some topics does not imply it
   * (MSK Developer Guide, "Produce data idempotently"). `idempotent: false` (a producer with
   * `KAFKA_IDEMPOTENT=false`) leaves it out.
   */
  produce(
    grantee: iam.IGrantable,
    scope: IConstruct,
    c: MskClusterRef,
    topics: readonly string[],
    options: { readonly idempotent?: boolean } = {},
  ): void {
    const p = grantee.grantPrincipal;
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: [
          "kafka-cluster:Connect",
          ...(options.idempotent === false ? [] : ["kafka-cluster:WriteDataIdempotently"]),
        ],
        resources: [c.clusterArn],
      }),
    );
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["kafka-cluster:DescribeTopic", "kafka-cluster:WriteData"],
        resources: topics.map((t) => mskTopicArn(scope, c, t)),
      }),
    );
  },

  /** Create and update `topics` with a Kafka admin client (MSK Serverless topic custom resource). */
  administerTopics(
    grantee: iam.IGrantable,
    scope: IConstruct,
    c: MskClusterRef,
    topics: readonly string[],
  ): void {
    const p = grantee.grantPrincipal;
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["kafka-cluster:Connect"], resources: [c.clusterArn] }),
    );
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: [
          "kafka-cluster:CreateTopic",
          "kafka-cluster:DescribeTopic",
          "kafka-cluster:AlterTopic",
          "kafka-cluster:DeleteTopic",
          "kafka-cluster:DescribeTopicDynamicConfiguration",
          "kafka-cluster:AlterTopicDynamicConfiguration",
        ],
        resources: topics.map((t) => mskTopicArn(scope, c, t)),
      }),
    );
  },

  /**
   * What a Lambda MSK event source mapping does with the function's role, besides consuming: read
   * the cluster and its brokers, and reach its subnets through network interfaces. The Lambda
   * developer guide ("Configuring Lambda permissions for Amazon MSK event source mappings") lists
   * these as required, the AWSLambdaMSKExecutionRole managed policy holds them, and Lambda checks
   * the role for them when the mapping is created. A function's VPC role (the
   * AWSLambdaVPCAccessExecutionRole policy CDK attaches) has neither `ec2:DescribeVpcs` nor
   * `ec2:DescribeSecurityGroups`. `kafka:GetBootstrapBrokers` and the EC2 actions have no
   * resource-level permissions (IAM's service authorization reference), so they are granted on `*`
   * (a grant scoped to the cluster would not allow them).
   */
  eventSourceMapping(grantee: iam.IGrantable, c: MskClusterRef): void {
    const p = grantee.grantPrincipal;
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["kafka:DescribeClusterV2"], resources: [c.clusterArn] }),
    );
    p.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: [...MSK_MAPPING_UNSCOPED_ACTIONS], resources: ["*"] }),
    );
  },
};
