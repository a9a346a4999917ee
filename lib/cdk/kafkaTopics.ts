import { CustomResource, Duration, RemovalPolicy } from "aws-cdk-lib";
import * as msk from "aws-cdk-lib/aws-msk";
import { Construct } from "constructs";
import { type MskClusterRef, MskGrants } from "./mskCluster.ts";
import { PrebuiltFunction } from "./prebuiltFunction.ts";
import { type KafkaTopicSpec, ladderTopics, type RetryLadderDeclaration } from "./retryLadder.ts";

/** Topic configs MSK Serverless lets a client set; others (e.g. `min.insync.replicas`) are fixed there. */
export const MSK_SERVERLESS_TOPIC_CONFIGS = new Set([
  "cleanup.policy",
  "compression.type",
  "max.message.bytes",
  "message.timestamp.difference.max.ms",
  "message.timestamp.type",
  "retention.bytes",
  "retention.ms",
]);

/** Props of `KafkaTopics`. */
export interface KafkaTopicsProps {
  /** The cluster the topics live on (provisioned: `AWS::MSK::Topic`; serverless: a custom resource). */
  readonly cluster: MskClusterRef;
  /** Topics to manage. Use `ladder` for a consumer's retry ladder. @default - none */
  readonly topics?: readonly KafkaTopicSpec[];
  /**
   * A retry ladder: its main, retry and dead-letter topics (the same declaration configures the
   * consumer through `addMskTrigger`). @default - none
   */
  readonly ladder?: RetryLadderDeclaration;
  /**
   * What deleting the stack does to the topics (MSK Serverless custom resource only; CloudFormation
   * deletes `AWS::MSK::Topic`s unless retained). @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Kafka topic configs as MSK's `Configs` wants them: `key=value` lines, base64. */
export function encodeTopicConfigs(configs: Readonly<Record<string, string>>): string {
  const text = Object.entries(configs)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
  return Buffer.from(text, "utf8").toString("base64");
}

/**
 * Kafka topics on MSK. On a provisioned cluster (Kafka ≥ 3.6) each topic is an `AWS::MSK::Topic`;
 * on MSK Serverless a custom resource creates and updates them with a Kafka admin client over IAM,
 * and refuses to shrink partitions.
 */
export class KafkaTopics extends Construct {
  /** Every topic managed: the ladder's, then `props.topics`. */
  readonly topics: readonly KafkaTopicSpec[];
  /** One resource per topic: an `AWS::MSK::Topic` (provisioned) or a `Custom::KafkaTopic` (serverless). */
  readonly resources: Array<msk.CfnTopic | CustomResource> = [];
  /** The custom resource's admin function (MSK Serverless only). @default - none on a provisioned cluster */
  adminFunction?: PrebuiltFunction;

  /** Creates the topics on the cluster. */
  constructor(scope: Construct, id: string, props: KafkaTopicsProps) {
    super(scope, id);
    this.topics = [...(props.ladder ? ladderTopics(props.ladder) : []), ...(props.topics ?? [])];
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const c = props.cluster;

    if (c.kind === "provisioned") {
      for (const t of this.topics) {
        const topic = new msk.CfnTopic(this, t.name, {
          clusterArn: c.clusterArn,
          topicName: t.name,
          partitionCount: t.partitions,
          replicationFactor: t.replicationFactor,
          configs: encodeTopicConfigs(t.configs),
        });
        topic.applyRemovalPolicy(removalPolicy);
        this.resources.push(topic);
      }
      return;
    }

    const admin = new PrebuiltFunction(this, "Admin", {
      prebuilt: "kafkaTopics",
      consumerName: "kafka-topics-admin",
      description: "Creates and updates Kafka topics on MSK Serverless (custom resource)",
      timeout: Duration.minutes(5),
      memorySize: 256,
      vpc: c.vpc,
      vpcSubnets: c.subnets,
      securityGroups: [c.securityGroup],
    });
    MskGrants.administerTopics(
      admin.function,
      this,
      c,
      this.topics.map((t) => t.name),
    );
    this.adminFunction = admin;
    for (const t of this.topics) {
      const configs = Object.fromEntries(
        Object.entries(t.configs).filter(([k]) => MSK_SERVERLESS_TOPIC_CONFIGS.has(k)),
      );
      this.resources.push(
        new CustomResource(this, t.name, {
          serviceToken: admin.function.functionArn,
          resourceType: "Custom::KafkaTopic",
          properties: {
            Brokers: c.bootstrapBrokers,
            IamAuth: String(c.iamAuth ?? true),
            RemovalPolicy: removalPolicy === RemovalPolicy.DESTROY ? "destroy" : "retain",
            Topic: { Name: t.name, Partitions: t.partitions, ReplicationFactor: -1, Configs: configs },
          },
        }),
      );
    }
  }
}
