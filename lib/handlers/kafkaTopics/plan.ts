/**
 * What the MSK Serverless topic custom resource must do to make a topic match its declaration.
 * Pure, so it is tested without a cluster.
 */
export interface DesiredTopic {
  readonly name: string;
  readonly partitions: number;
  /** -1 lets the cluster choose (MSK Serverless always uses 3). */
  readonly replicationFactor: number;
  readonly configs: Readonly<Record<string, string>>;
}

export interface ExistingTopic {
  readonly name: string;
  readonly partitions: number;
  /** Only the configs the declaration manages are compared. */
  readonly configs: Readonly<Record<string, string | undefined>>;
}

export type TopicAction =
  | { readonly kind: "create"; readonly topic: DesiredTopic }
  | { readonly kind: "addPartitions"; readonly name: string; readonly from: number; readonly to: number }
  | {
      readonly kind: "alterConfigs";
      readonly name: string;
      readonly configs: Readonly<Record<string, string>>;
    };

export class TopicShrinkError extends Error {
  override readonly name = "TopicShrinkError";
}

export function planTopic(desired: DesiredTopic, existing: ExistingTopic | undefined): TopicAction[] {
  if (!Number.isInteger(desired.partitions) || desired.partitions < 1) {
    throw new Error(`topic ${desired.name}: partitions must be an integer ≥ 1, got ${desired.partitions}`);
  }
  if (!existing) return [{ kind: "create", topic: desired }];
  if (desired.partitions < existing.partitions) {
    throw new TopicShrinkError(
      `Refusing to shrink topic "${desired.name}" from ${existing.partitions} to ${desired.partitions} partitions: ` +
        `Kafka cannot remove partitions, and re-creating the topic would lose its records and break key ordering. ` +
        `Keep partitions at ${existing.partitions} or more, or create a new topic and migrate.`,
    );
  }
  const actions: TopicAction[] = [];
  if (desired.partitions > existing.partitions) {
    actions.push({
      kind: "addPartitions",
      name: desired.name,
      from: existing.partitions,
      to: desired.partitions,
    });
  }
  const changed = Object.entries(desired.configs).filter(([k, v]) => existing.configs[k] !== v);
  if (changed.length > 0) {
    // Kafka's AlterConfigs replaces a resource's whole set of dynamic configs: send all of them.
    actions.push({ kind: "alterConfigs", name: desired.name, configs: { ...desired.configs } });
  }
  return actions;
}

/** CloudFormation passes every property as a string; parse and validate them. */
export function parseDesiredTopic(raw: unknown): DesiredTopic {
  const r = raw as Record<string, unknown> | undefined;
  if (!r || typeof r.Name !== "string" || r.Name === "") throw new Error("property Topic.Name is required");
  const partitions = Number(r.Partitions);
  const replicationFactor = r.ReplicationFactor === undefined ? -1 : Number(r.ReplicationFactor);
  const configs: Record<string, string> = {};
  for (const [k, v] of Object.entries((r.Configs as Record<string, unknown> | undefined) ?? {}))
    configs[k] = String(v);
  if (!Number.isFinite(partitions)) throw new Error(`Topic.Partitions of ${r.Name} is not a number`);
  return { name: r.Name, partitions, replicationFactor, configs };
}
