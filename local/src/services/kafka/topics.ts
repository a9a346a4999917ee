import { type Admin, Kafka, logLevel } from "kafkajs";
// The library's kafkajs 2.2.4 fixes are side effects of its Kafka entry point (lib/kafka/config.ts).
import "reliable-consumers/kafka";
import { createTopicsWithLeaders } from "reliable-consumers/kafka";

/**
 * Creates topics on the local Kafka as they are declared (a CDK `AWS::MSK::Topic`, a retry ladder,
 * a test's own topic), then reads them back and checks them against the declaration. Topics are
 * never auto-created on the real cluster (as on MSK), so whatever is produced to must come through
 * here first.
 *
 * Fitted to the local cluster, and said so in `fitted`: a replication factor above the broker
 * count becomes the broker count (a 1-broker test cluster cannot hold 3 replicas), and
 * `min.insync.replicas` is capped at that replication factor (else every acks=all produce fails).
 * On the 3-broker cluster the reference declarations (RF 3, min ISR 2) apply unchanged.
 *
 * The librdkafka mock has no CreateTopics: there a metadata request creates each topic with the
 * mock's defaults (4 partitions, no configs), reported in `fitted`, not checked.
 */
export interface TopicDeclaration {
  readonly name: string;
  /** @default the cluster's `num.partitions` (1) */
  readonly partitions?: number;
  /** -1 or absent: the cluster's `default.replication.factor`. */
  readonly replicationFactor?: number;
  /** Topic configs, e.g. `retention.ms`, `min.insync.replicas`, `cleanup.policy`. */
  readonly configs?: Readonly<Record<string, string>>;
}

export interface CreatedTopic {
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  /** The declared configs as the cluster reports them. */
  readonly configs: Readonly<Record<string, string>>;
  /** false when the topic existed already (and matched). */
  readonly created: boolean;
  /** What differs from the declaration because of the local cluster's size or kind. */
  readonly fitted: readonly string[];
}

/** The cluster holds a topic that differs from its declaration (after fitting). */
export class TopicDeclarationMismatchError extends Error {
  override readonly name = "TopicDeclarationMismatchError";
}

/** `AWS::MSK::Topic` `Configs`: base64 of `key=value` lines (lib/cdk/kafkaTopics.ts encodes it). */
export function decodeTopicConfigs(base64: string): Record<string, string> {
  const configs: Record<string, string> = {};
  for (const line of Buffer.from(base64, "base64").toString("utf8").split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) configs[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return configs;
}

const TOPIC = 2; // kafkajs ConfigResourceTypes.TOPIC
const BROKER = 4; // kafkajs ConfigResourceTypes.BROKER

/** What the cluster will really be asked for: the declaration fitted to `brokers` brokers. */
export function fitDeclaration(
  declared: TopicDeclaration,
  brokers: number,
  defaultReplicationFactor: number,
): { topic: Required<TopicDeclaration>; fitted: string[] } {
  const fitted: string[] = [];
  const asked =
    declared.replicationFactor === undefined || declared.replicationFactor < 0
      ? defaultReplicationFactor
      : declared.replicationFactor;
  const replicationFactor = Math.min(asked, brokers);
  if (replicationFactor < asked)
    fitted.push(
      `replication factor ${asked} → ${replicationFactor} (${brokers} broker${brokers === 1 ? "" : "s"})`,
    );
  const configs = { ...(declared.configs ?? {}) };
  const minIsr = configs["min.insync.replicas"];
  if (minIsr !== undefined && Number(minIsr) > replicationFactor) {
    configs["min.insync.replicas"] = String(replicationFactor);
    fitted.push(`min.insync.replicas ${minIsr} → ${replicationFactor}`);
  }
  return {
    topic: { name: declared.name, partitions: declared.partitions ?? -1, replicationFactor, configs },
    fitted,
  };
}

/** Creates (or finds) every declared topic and checks it; throws TopicDeclarationMismatchError. */
export async function createDeclaredTopics(
  admin: Admin,
  declarations: readonly TopicDeclaration[],
): Promise<CreatedTopic[]> {
  if (declarations.length === 0) return [];
  const cluster = await admin.describeCluster();
  // The mock names a controller that is none of its brokers, and cannot create topics.
  if (!cluster.brokers.some((b) => b.nodeId === cluster.controller)) return viaMetadata(admin, declarations);

  const brokerConfig = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [
      { type: BROKER, name: String(cluster.controller), configNames: ["default.replication.factor"] },
    ],
  });
  const defaultRf = Number(
    brokerConfig.resources[0]?.configEntries.find((e) => e.configName === "default.replication.factor")
      ?.configValue ?? cluster.brokers.length,
  );
  const plans = declarations.map((d) => fitDeclaration(d, cluster.brokers.length, defaultRf));
  const existing = new Set(await admin.listTopics());
  const toCreate = plans.filter((p) => !existing.has(p.topic.name));
  if (toCreate.length > 0) {
    await createTopicsWithLeaders(
      admin,
      toCreate.map(({ topic }) => ({
        topic: topic.name,
        numPartitions: topic.partitions,
        replicationFactor: topic.replicationFactor,
        configEntries: Object.entries(topic.configs).map(([name, value]) => ({ name, value })),
      })),
    );
  }
  const names = plans.map((p) => p.topic.name);
  const metadata = await admin.fetchTopicMetadata({ topics: names });
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: plans.map(({ topic }) => ({
      type: TOPIC,
      name: topic.name,
      configNames: Object.keys(topic.configs),
    })),
  });
  return plans.map(({ topic, fitted }) => {
    const md = metadata.topics.find((t) => t.name === topic.name);
    const partitions = md?.partitions.length ?? 0;
    const replicationFactor = Math.min(...(md?.partitions.map((p) => p.replicas.length) ?? [0]));
    const configs: Record<string, string> = {};
    for (const entry of described.resources.find((r) => r.resourceName === topic.name)?.configEntries ?? [])
      configs[entry.configName] = entry.configValue;
    const problems = [
      ...(topic.partitions > 0 && partitions !== topic.partitions
        ? [`${partitions} partitions, declared ${topic.partitions}`]
        : []),
      ...(replicationFactor !== topic.replicationFactor
        ? [`replication factor ${replicationFactor}, declared ${topic.replicationFactor}`]
        : []),
      ...Object.entries(topic.configs)
        .filter(([k, v]) => configs[k] !== v)
        .map(([k, v]) => `${k}=${configs[k]}, declared ${v}`),
    ];
    if (problems.length > 0) {
      throw new TopicDeclarationMismatchError(
        `topic ${topic.name} on the local cluster: ${problems.join("; ")}`,
      );
    }
    return {
      name: topic.name,
      partitions,
      replicationFactor,
      configs,
      created: !existing.has(topic.name),
      fitted,
    };
  });
}

async function viaMetadata(admin: Admin, declarations: readonly TopicDeclaration[]): Promise<CreatedTopic[]> {
  const metadata = await admin.fetchTopicMetadata({ topics: declarations.map((d) => d.name) });
  return declarations.map((d) => {
    const md = metadata.topics.find((t) => t.name === d.name);
    const partitions = md?.partitions.length ?? 0;
    const fitted = [
      ...(d.partitions !== undefined && d.partitions !== partitions
        ? [`${partitions} partitions, declared ${d.partitions} (the mock has no CreateTopics)`]
        : []),
      ...(Object.keys(d.configs ?? {}).length > 0
        ? ["configs not applied (the mock has no CreateTopics)"]
        : []),
    ];
    return {
      name: d.name,
      partitions,
      replicationFactor: Math.min(...(md?.partitions.map((p) => p.replicas.length) ?? [0])),
      configs: {},
      created: true,
      fitted,
    };
  });
}

/** createDeclaredTopics with an admin client of its own, on `brokers` (plaintext, local). */
export async function createDeclaredTopicsOn(
  brokers: readonly string[],
  declarations: readonly TopicDeclaration[],
): Promise<CreatedTopic[]> {
  const admin = new Kafka({
    clientId: "declare-topics",
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    return await createDeclaredTopics(admin, declarations);
  } finally {
    await admin.disconnect();
  }
}
