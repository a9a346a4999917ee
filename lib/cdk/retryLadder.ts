import { type KafkaLadderStage, kafkaRetryPathSeconds } from "./rules/kafkaRules.ts";
import { ConsumerRuleError } from "./rules/ruleError.ts";

/**
 * One declaration of a Kafka consumer's retry ladder. The CDK creates the topics from it, and the
 * consumer function receives the same declaration (as `KAFKA_RETRY_LADDER`) to route failures, so
 * the two cannot drift apart. Pure data and functions: no CDK import.
 */
export interface RetryLadderDeclaration {
  /** The main topic, e.g. `order-events` (1–200 characters: letters, digits, `.`, `_`, `-`). */
  readonly topic: string;
  /** Delay of each retry topic in whole seconds, growing, e.g. `[5, 60, 600]` → `.retry.5s`, `.retry.1m`, `.retry.10m`. */
  readonly retryDelaysSeconds: readonly number[];
  /** Partitions of every topic in the ladder (≥ 1; retry topics keep the main topic's keying). */
  readonly partitions: number;
  /** Replicas of each partition (≥ 1, at most the brokers). @default 3 */
  readonly replicationFactor?: number;
  /** `min.insync.replicas` (1 to replicationFactor). @default min(2, replicationFactor) */
  readonly minInsyncReplicas?: number;
  /** Retention of the main topic. @default 7 days */
  readonly retentionSeconds?: number;
  /** Retention of each retry topic. @default 7 days */
  readonly retryRetentionSeconds?: number;
  /**
   * Retention of the dead-letter topic: the time you have to fix and replay. A replay produces new
   * records into the main topic, so the dedup window must cover this + the main topic's retention.
   * @default 14 days
   */
  readonly deadLetterRetentionSeconds?: number;
  /** Replays planned beyond retention (e.g. from an archive), in seconds (≥ 0). @default 0 */
  readonly plannedReplaySeconds?: number;
}

/** A topic to create: name, partitions, replication and configs. */
export interface KafkaTopicSpec {
  /** The topic's name, e.g. `order-events.retry.5s`. */
  readonly name: string;
  /** Its partitions (a count). */
  readonly partitions: number;
  /** Replicas of each partition (a count). */
  readonly replicationFactor: number;
  /** Kafka topic configs, e.g. `retention.ms`. */
  readonly configs: Readonly<Record<string, string>>;
  /** Seconds a record waits in this topic before it is retried (0 for the main and DLQ topics). */
  readonly delaySeconds: number;
  /** Its place in the ladder: the main topic, a retry rung, or the dead-letter topic. */
  readonly role: "main" | "retry" | "dead-letter";
}

/** What the consumer needs at run time; serialised into `KAFKA_RETRY_LADDER`. */
export interface RetryLadderRuntimeConfig {
  /** The main topic. */
  readonly topic: string;
  /** The retry topics in order, each with its delay in ms. */
  readonly retries: ReadonlyArray<{ readonly topic: string; readonly delayMs: number }>;
  /** The dead-letter topic, `<topic>.DLQ`. */
  readonly deadLetterTopic: string;
}

const DAY = 86_400;

/** `5` → `5s`, `60` → `1m`, `600` → `10m`, `3600` → `1h`, `90` → `90s`. */
export function delayLabel(seconds: number): string {
  if (!Number.isInteger(seconds) || seconds <= 0)
    throw new ConsumerRuleError(
      "RetryLadderInvalid",
      `retry delay must be a positive integer of seconds, got ${seconds}`,
    );
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

/** A retry topic's name: `<topic>.retry.<delay>`. */
export const retryTopicName = (topic: string, delaySeconds: number): string =>
  `${topic}.retry.${delayLabel(delaySeconds)}`;
/** The dead-letter topic of a topic: `<topic>.DLQ`. */
export const deadLetterTopicName = (topic: string): string => `${topic}.DLQ`;

function validate(d: RetryLadderDeclaration): void {
  if (!/^[a-zA-Z0-9._-]{1,200}$/.test(d.topic))
    throw new ConsumerRuleError("RetryLadderInvalid", `invalid Kafka topic name "${d.topic}"`);
  if (!Number.isInteger(d.partitions) || d.partitions < 1)
    throw new ConsumerRuleError("RetryLadderInvalid", `partitions must be ≥ 1, got ${d.partitions}`);
  for (let i = 1; i < d.retryDelaysSeconds.length; i++) {
    if (d.retryDelaysSeconds[i]! <= d.retryDelaysSeconds[i - 1]!) {
      throw new ConsumerRuleError(
        "RetryLadderInvalid",
        `retry delays of "${d.topic}" must grow: ${d.retryDelaysSeconds.join(", ")}`,
      );
    }
  }
}

/** Every topic of the ladder: main, retries in order, dead-letter. */
export function ladderTopics(d: RetryLadderDeclaration): KafkaTopicSpec[] {
  validate(d);
  const replicationFactor = d.replicationFactor ?? 3;
  const minIsr = d.minInsyncReplicas ?? Math.min(2, replicationFactor);
  if (minIsr > replicationFactor) {
    throw new ConsumerRuleError(
      "RetryLadderInvalid",
      `min.insync.replicas (${minIsr}) of "${d.topic}" exceeds its replication factor (${replicationFactor})`,
    );
  }
  const configs = (retentionSeconds: number) => ({
    "cleanup.policy": "delete",
    "retention.ms": String(retentionSeconds * 1000),
    "min.insync.replicas": String(minIsr),
  });
  const base = { partitions: d.partitions, replicationFactor };
  return [
    {
      ...base,
      name: d.topic,
      role: "main",
      delaySeconds: 0,
      configs: configs(d.retentionSeconds ?? 7 * DAY),
    },
    ...d.retryDelaysSeconds.map(
      (delay): KafkaTopicSpec => ({
        ...base,
        name: retryTopicName(d.topic, delay),
        role: "retry",
        delaySeconds: delay,
        configs: configs(d.retryRetentionSeconds ?? 7 * DAY),
      }),
    ),
    {
      ...base,
      name: deadLetterTopicName(d.topic),
      role: "dead-letter",
      delaySeconds: 0,
      configs: configs(d.deadLetterRetentionSeconds ?? 14 * DAY),
    },
  ];
}

/** The ladder's declaration as the consumer reads it from `KAFKA_RETRY_LADDER`. */
export function ladderRuntimeConfig(d: RetryLadderDeclaration): RetryLadderRuntimeConfig {
  validate(d);
  return {
    topic: d.topic,
    retries: d.retryDelaysSeconds.map((delay) => ({
      topic: retryTopicName(d.topic, delay),
      delayMs: delay * 1000,
    })),
    deadLetterTopic: deadLetterTopicName(d.topic),
  };
}

/**
 * The longest time after a first failure that a record of this ladder can reach the consumer. The
 * dead-letter topic's records are replayed (`dlq replay`) into the main topic as new records, so
 * that stage counts the main topic's retention too.
 */
export function ladderRetryPathSeconds(d: RetryLadderDeclaration): number | undefined {
  const topics = ladderTopics(d);
  const retentionOf = (t: KafkaTopicSpec) => Number(t.configs["retention.ms"]) / 1000;
  const mainRetention = retentionOf(topics[0]!);
  const stages: KafkaLadderStage[] = topics.map((t) => ({
    topic: t.name,
    delaySeconds: t.delaySeconds,
    retentionSeconds: retentionOf(t),
    ...(t.role === "dead-letter" ? { replayedIntoRetentionSeconds: mainRetention } : {}),
  }));
  return kafkaRetryPathSeconds(stages, d.plannedReplaySeconds ?? 0);
}
