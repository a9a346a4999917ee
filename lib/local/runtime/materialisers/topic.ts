import type { CfnResource } from "../cloudAssembly.ts";
import { resolveString } from "../intrinsics.ts";
import type { Materialised, MaterialiseState, ResourceMaterialiser } from "./state.ts";

/** Creates a topic on the local Kafka cluster and notes a partition count it could not honour. */
async function createTopic(
  s: MaterialiseState,
  id: string,
  type: string,
  name: string,
  partitions: number | undefined,
): Promise<Materialised> {
  const admin = await s.kafkaAdmin();
  try {
    await admin.createTopics({
      topics: [{ topic: name, ...(partitions ? { numPartitions: partitions } : {}) }],
      waitForLeaders: true,
    });
  } catch {
    // The librdkafka mock has no CreateTopics: a metadata request creates the topic with its default.
  }
  const md = await admin.fetchTopicMetadata({ topics: [name] });
  const actual = md.topics[0]?.partitions.length ?? 0;
  if (partitions && actual !== partitions)
    s.note(
      `topic ${name}: ${partitions} partitions declared, the local cluster created ${actual} (it has no CreateTopics)`,
    );
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
  return createTopic(
    s,
    id,
    r.Type,
    resolveString(p.TopicName, s.ctx, `${id}.TopicName`),
    p.PartitionCount === undefined ? undefined : Number(p.PartitionCount),
  );
};

/** A custom resource with a `Topic: { Name, Partitions }` property (e.g. `Custom::KafkaTopic`). */
export function isCustomTopic(r: CfnResource): boolean {
  const topic = r.Properties?.Topic as { Name?: unknown } | undefined;
  return r.Type.startsWith("Custom::") && topic?.Name !== undefined;
}

/** The Kafka-topics custom resource → a topic on the local Kafka cluster (no custom resource handler runs). */
export const materialiseCustomTopic: ResourceMaterialiser = (id, r, s) => {
  const topic = r.Properties?.Topic as { Name: unknown; Partitions?: unknown };
  return createTopic(
    s,
    id,
    r.Type,
    resolveString(topic.Name, s.ctx, `${id}.Topic.Name`),
    topic.Partitions === undefined ? undefined : Number(topic.Partitions),
  );
};
