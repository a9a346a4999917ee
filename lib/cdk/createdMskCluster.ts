import { RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as logs from "aws-cdk-lib/aws-logs";
import * as msk from "aws-cdk-lib/aws-msk";
import * as cr from "aws-cdk-lib/custom-resources";
import { Construct } from "constructs";
import { acknowledgeGuardRule, CONTROL_TOWER_RULE } from "./guardAcknowledgements.ts";
import type { MskClusterRef } from "./mskCluster.ts";

/** Props of `CreatedMskCluster`. */
export interface CreatedMskClusterProps {
  /** An MSK Kafka version ≥ 3.6 (`AWS::MSK::Topic` needs it). @default "3.6.0" */
  readonly kafkaVersion?: string;
  /** An MSK broker instance type (`kafka.t3.small` is the smallest). @default "kafka.t3.small" */
  readonly instanceType?: string;
  /** Brokers, one per AZ (2 or 3; the VPC gets as many AZs). @default 2 */
  readonly brokers?: number;
}

/**
 * A small MSK Provisioned cluster with SASL/IAM and TLS, in a new VPC with isolated subnets and
 * VPC endpoints (no NAT): for trying the reference service in an account without a cluster. It is
 * not free when idle; see docs/cdk.md.
 */
export class CreatedMskCluster extends Construct {
  /**
   * The cluster as the triggers and topics take it (SASL/IAM brokers, the VPC, isolated subnets, the security
   * group).
   */
  readonly ref: MskClusterRef;
  /**
   * The new VPC: isolated subnets in one AZ per broker, no NAT; interface endpoints for SQS, Lambda
   * and STS, gateway endpoints for DynamoDB and S3.
   */
  readonly vpc: ec2.Vpc;
  /** The MSK Provisioned cluster. */
  readonly cluster: msk.CfnCluster;

  /** Creates the VPC, the cluster and the lookup of its SASL/IAM bootstrap brokers. */
  constructor(scope: Construct, id: string, props: CreatedMskClusterProps = {}) {
    super(scope, id);
    const brokers = props.brokers ?? 2;
    this.vpc = this.isolatedVpc(brokers);
    const subnets = { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
    const sg = new ec2.SecurityGroup(this, "ClientsAndBrokers", {
      vpc: this.vpc,
      description: "MSK brokers and their clients (SASL/IAM on 9098, HTTPS to VPC endpoints)",
      allowAllOutbound: true,
    });
    sg.addIngressRule(sg, ec2.Port.tcp(9098), "Kafka SASL/IAM from clients in this group");
    sg.addIngressRule(sg, ec2.Port.tcp(443), "HTTPS to interface endpoints from clients in this group");
    // Functions in isolated subnets reach SQS, and MSK event-source pollers reach Lambda and STS, privately.
    for (const [name, service] of [
      ["Sqs", ec2.InterfaceVpcEndpointAwsService.SQS],
      ["Lambda", ec2.InterfaceVpcEndpointAwsService.LAMBDA],
      ["Sts", ec2.InterfaceVpcEndpointAwsService.STS],
    ] as const) {
      this.vpc.addInterfaceEndpoint(name, { service, subnets, securityGroups: [sg], open: false });
    }

    const brokerLogs = new logs.LogGroup(this, "BrokerLogs", {
      retention: logs.RetentionDays.ONE_WEEK,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.cluster = new msk.CfnCluster(this, "Cluster", {
      clusterName: `${this.node.addr.slice(0, 8)}-reference`,
      kafkaVersion: props.kafkaVersion ?? "3.6.0",
      numberOfBrokerNodes: brokers,
      brokerNodeGroupInfo: {
        instanceType: props.instanceType ?? "kafka.t3.small",
        clientSubnets: this.vpc.selectSubnets(subnets).subnetIds,
        securityGroups: [sg.securityGroupId],
        storageInfo: { ebsStorageInfo: { volumeSize: 10 } },
      },
      clientAuthentication: { sasl: { iam: { enabled: true } }, unauthenticated: { enabled: false } },
      encryptionInfo: { encryptionInTransit: { clientBroker: "TLS", inCluster: true } },
      loggingInfo: { brokerLogs: { cloudWatchLogs: { enabled: true, logGroup: brokerLogs.logGroupName } } },
    });

    const bootstrap = this.bootstrapBrokers();

    this.ref = {
      clusterArn: this.cluster.attrArn,
      bootstrapBrokers: bootstrap.getResponseField("BootstrapBrokerStringSaslIam"),
      kind: "provisioned",
      iamAuth: true,
      vpc: this.vpc,
      subnets,
      securityGroup: sg,
    };
  }

  /** Isolated private subnets in one zone per broker, with gateway endpoints and rejected-traffic flow logs. */
  private isolatedVpc(brokers: number): ec2.Vpc {
    return new ec2.Vpc(this, "Vpc", {
      maxAzs: brokers,
      natGateways: 0,
      subnetConfiguration: [{ name: "private", subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
      gatewayEndpoints: {
        DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB },
        S3: { service: ec2.GatewayVpcEndpointAwsService.S3 },
      },
      flowLogs: {
        all: {
          destination: ec2.FlowLogDestination.toCloudWatchLogs(
            new logs.LogGroup(this, "FlowLogs", {
              retention: logs.RetentionDays.ONE_WEEK,
              removalPolicy: RemovalPolicy.DESTROY,
            }),
          ),
          trafficType: ec2.FlowLogTrafficType.REJECT,
        },
      },
    });
  }

  /** The SASL/IAM bootstrap brokers, read at deploy time. */
  private bootstrapBrokers(): cr.AwsCustomResource {
    // The bootstrap broker string is not a CloudFormation attribute of AWS::MSK::Cluster.
    const bootstrap = new cr.AwsCustomResource(this, "BootstrapBrokers", {
      onUpdate: {
        service: "Kafka",
        action: "getBootstrapBrokers",
        parameters: { ClusterArn: this.cluster.attrArn },
        physicalResourceId: cr.PhysicalResourceId.of(this.cluster.attrArn),
        outputPaths: ["BootstrapBrokerStringSaslIam"],
      },
      policy: cr.AwsCustomResourcePolicy.fromSdkCalls({ resources: [this.cluster.attrArn] }),
      installLatestAwsSdk: false,
    });
    // AwsCustomResource runs in a singleton function that aws-cdk-lib creates at the stack's root.
    const singleton = Stack.of(this)
      .node.children.filter((c) => c.node.id.startsWith("AWS679f53fac002430cb0da5b7982bd2287"))
      .at(0);
    if (singleton) {
      Validations.of(singleton).acknowledge({
        id: "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
        reason:
          "The singleton function of AwsCustomResource (one read-only kafka:GetBootstrapBrokers call at deploy " +
          "time) uses aws-cdk-lib's own role with the basic execution policy; the construct does not let us replace it.",
      });
      acknowledgeGuardRule(
        singleton,
        CONTROL_TOWER_RULE.lambdaInVpc,
        "The singleton function of AwsCustomResource (one read-only kafka:GetBootstrapBrokers call at deploy " +
          "time) is aws-cdk-lib's own; the construct does not place it in a VPC, and the new VPC has no endpoint " +
          "for the MSK control plane it calls.",
        "AWS::Lambda::Function",
      );
    }
    return bootstrap;
  }
}
