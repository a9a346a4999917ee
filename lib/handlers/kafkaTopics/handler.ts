import { request } from "node:https";
import type { CloudFormationCustomResourceEvent } from "aws-lambda";
import { Kafka } from "kafkajs";
import { toKafkaJsConfig } from "../../kafka/config.ts";
import { createTopicsWithLeaders } from "../../kafka/topicsWithLeaders.ts";
import { type DesiredTopic, type ExistingTopic, parseDesiredTopic, planTopic } from "./plan.ts";

/**
 * Custom resource for topics on MSK Serverless (which has no `AWS::MSK::Topic`): creates and updates
 * one topic with a Kafka admin client over SASL/IAM. It adds partitions and alters configs, refuses
 * to shrink partitions, and on delete keeps the topic unless `RemovalPolicy` is `destroy`.
 *
 * Properties: `Brokers` (comma-separated), `Topic` ({ Name, Partitions, ReplicationFactor, Configs }),
 * `IamAuth` ("true"/"false"), `RemovalPolicy` ("retain" | "destroy").
 */
export async function handler(event: CloudFormationCustomResourceEvent): Promise<void> {
  const physicalId =
    event.RequestType === "Create"
      ? String(event.ResourceProperties.Topic?.Name ?? "unknown")
      : event.PhysicalResourceId;
  try {
    const id = await apply(event);
    await respond(event, "SUCCESS", id);
  } catch (error) {
    console.error(error);
    await respond(event, "FAILED", physicalId, error instanceof Error ? error.message : String(error));
  }
}

async function apply(event: CloudFormationCustomResourceEvent): Promise<string> {
  const props = event.ResourceProperties as Record<string, unknown>;
  const desired = parseDesiredTopic(props.Topic);
  const brokers = String(props.Brokers ?? "")
    .split(",")
    .map((b) => b.trim())
    .filter(Boolean);
  const kafka = new Kafka(
    toKafkaJsConfig({
      brokers,
      iamAuth: props.IamAuth !== "false",
      clientId: "kafka-topics-custom-resource",
    }),
  );
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (event.RequestType === "Delete") {
      if (props.RemovalPolicy === "destroy") {
        const existing = await admin.listTopics();
        if (existing.includes(event.PhysicalResourceId))
          await admin.deleteTopics({ topics: [event.PhysicalResourceId] });
      }
      return event.PhysicalResourceId;
    }
    const current = await describe(admin, desired);
    for (const action of planTopic(desired, current)) {
      switch (action.kind) {
        case "create":
          await createTopicsWithLeaders(admin, [
            {
              topic: action.topic.name,
              numPartitions: action.topic.partitions,
              replicationFactor: action.topic.replicationFactor,
              configEntries: Object.entries(action.topic.configs).map(([name, value]) => ({ name, value })),
            },
          ]);
          break;
        case "addPartitions":
          await admin.createPartitions({ topicPartitions: [{ topic: action.name, count: action.to }] });
          break;
        case "alterConfigs":
          await admin.alterConfigs({
            validateOnly: false,
            resources: [
              {
                type: 2, // ConfigResourceTypes.TOPIC
                name: action.name,
                configEntries: Object.entries(action.configs).map(([name, value]) => ({ name, value })),
              },
            ],
          });
          break;
      }
    }
    // A renamed topic gets a new physical id; CloudFormation then deletes the old one (kept by default).
    return desired.name;
  } finally {
    await admin.disconnect();
  }
}

async function describe(
  admin: ReturnType<Kafka["admin"]>,
  desired: DesiredTopic,
): Promise<ExistingTopic | undefined> {
  const names = await admin.listTopics();
  if (!names.includes(desired.name)) return undefined;
  const metadata = await admin.fetchTopicMetadata({ topics: [desired.name] });
  const partitions = metadata.topics[0]?.partitions.length ?? 0;
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: 2, name: desired.name, configNames: Object.keys(desired.configs) }],
  });
  const configs: Record<string, string | undefined> = {};
  for (const entry of described.resources[0]?.configEntries ?? [])
    configs[entry.configName] = entry.configValue;
  return { name: desired.name, partitions, configs };
}

function respond(
  event: CloudFormationCustomResourceEvent,
  status: "SUCCESS" | "FAILED",
  physicalResourceId: string,
  reason?: string,
): Promise<void> {
  const body = JSON.stringify({
    Status: status,
    Reason: (reason ?? "see CloudWatch Logs").slice(0, 3000),
    PhysicalResourceId: physicalResourceId,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
    Data: {},
  });
  return new Promise((resolve, reject) => {
    const req = request(
      event.ResponseURL,
      { method: "PUT", headers: { "content-type": "", "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on("end", () => resolve());
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
