import type { CfnResource } from "../../runtime/cloudAssembly.ts";
import { resolveString } from "../../runtime/intrinsics.ts";
import type { Materialised, MaterialiseState, ResourceMaterialiser } from "../../runtime/materialiseState.ts";
import { createDeclaredTopics, decodeTopicConfigs, type TopicDeclaration } from "./topics.ts";

/**
 * Creates a topic on the local Kafka cluster as declared (partitions, replication, configs),
 * fitted to the local cluster (one broker: replication 1) and checked; each fitting is noted.
 */
async function createTopic(
  s: MaterialiseState,
  id: string,
  type: string,
  declared: TopicDeclaration,
): Promise<Materialised> {
  const [created] = await createDeclaredTopics(await s.kafkaAdmin(), [declared]);
  const actual = created?.partitions ?? 0;
  for (const fitted of created?.fitted ?? []) s.note(`topic ${declared.name}: ${fitted}`);
  const { name, partitions } = declared;
  const arn = `arn:aws:kafka:${s.region}:${s.accountId}:topic/local/${name}`;
  s.topics.push({
    logicalId: id,
    name,
    arn,
    ...(partitions ? { partitions } : {}),
    actualPartitions: actual,
  });
  s.report.created.push({ logicalId: id, type, detail: `${name} (${actual} partitions)` });
  return { ref: arn, attrs: { TopicArn: arn, TopicName: name } };
}

/** `AWS::MSK::Topic` → a topic on the local Kafka cluster. */
export const materialiseMskTopic: ResourceMaterialiser = (id, r, s) => {
  const p = r.Properties ?? {};
  return createTopic(s, id, r.Type, {
    name: resolveString(p.TopicName, s.ctx, `${id}.TopicName`),
    ...(p.PartitionCount === undefined ? {} : { partitions: Number(p.PartitionCount) }),
    ...(p.ReplicationFactor === undefined ? {} : { replicationFactor: Number(p.ReplicationFactor) }),
    ...(typeof p.Configs === "string" ? { configs: decodeTopicConfigs(p.Configs) } : {}),
  });
};

/** A custom resource with a `Topic: { Name, Partitions }` property (e.g. `Custom::KafkaTopic`). */
export function isCustomTopic(r: CfnResource): boolean {
  const topic = r.Properties?.Topic as { Name?: unknown } | undefined;
  return r.Type.startsWith("Custom::") && topic?.Name !== undefined;
}

/** The Kafka-topics custom resource → a topic on the local Kafka cluster (no custom resource handler runs). */
export const materialiseCustomTopic: ResourceMaterialiser = (id, r, s) => {
  const topic = r.Properties?.Topic as {
    Name: unknown;
    Partitions?: unknown;
    ReplicationFactor?: unknown;
    Configs?: unknown;
  };
  return createTopic(s, id, r.Type, {
    name: resolveString(topic.Name, s.ctx, `${id}.Topic.Name`),
    ...(topic.Partitions === undefined ? {} : { partitions: Number(topic.Partitions) }),
    ...(topic.ReplicationFactor === undefined ? {} : { replicationFactor: Number(topic.ReplicationFactor) }),
    ...(typeof topic.Configs === "object" && topic.Configs !== null
      ? {
          configs: Object.fromEntries(
            Object.entries(topic.Configs as Record<string, unknown>).map(([k, v]) => [k, String(v)]),
          ),
        }
      : {}),
  });
};
