import { setTimeout as sleep } from "node:timers/promises";
import type { Admin, ITopicConfig, Kafka, SeekEntry } from "kafkajs";
import { findBrokerError } from "./brokerErrors.ts";

/** What a broker answers for a topic it does not know yet, or whose partitions have no leader yet. */
const NOT_YET = new Set(["UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE"]);

/** Options of `createTopicsWithLeaders`. */
export interface TopicsWithLeadersOptions {
  /** How long to wait for every partition to have a leader. @default 30000 */
  readonly timeoutMs?: number;
}

/**
 * Creates topics (those that exist are left as they are) and waits until every partition of each
 * has a leader on the brokers' metadata. kafkajs's own `waitForLeaders` asks the controller broker
 * once per poll and tolerates only LEADER_NOT_AVAILABLE; but a broker whose metadata has not caught
 * up with the controller yet (KRaft propagates new topics asynchronously) answers
 * UNKNOWN_TOPIC_OR_PARTITION for a topic created a moment ago, and kafkajs then gives up at once:
 * seen on a loaded machine, where a test's `createTopics` failed with "This server does not host
 * this topic-partition" after the topic had been created.
 */
export async function createTopicsWithLeaders(
  admin: Pick<Admin, "createTopics" | "fetchTopicMetadata">,
  topics: ITopicConfig[],
  options: TopicsWithLeadersOptions = {},
): Promise<void> {
  if (topics.length === 0) return;
  await admin.createTopics({ topics, waitForLeaders: false });
  const names = topics.map((t) => t.topic);
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let waiting = "";
  for (let delay = 50; ; delay = Math.min(1_000, delay * 2)) {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics: names });
      const led = (name: string) => {
        const partitions = found.find((t) => t.name === name)?.partitions ?? [];
        return partitions.length > 0 && partitions.every((p) => p.leader >= 0 && p.partitionErrorCode === 0);
      };
      const missing = names.filter((n) => !led(n));
      if (missing.length === 0) return;
      waiting = `no leader yet for ${missing.join(", ")}`;
    } catch (error) {
      const known = findBrokerError(error, NOT_YET);
      if (!known) throw error;
      waiting = known.type;
    }
    if (Date.now() >= deadline)
      throw new Error(
        `topics ${names.join(", ")} not ready after ${options.timeoutMs ?? 30_000} ms: ${waiting}`,
      );
    await sleep(delay);
  }
}

/** A leader that is moving, or not serving a partition yet: asking again, with fresh metadata, answers. */
const LEADER_MOVING = new Set([...NOT_YET, "NOT_LEADER_FOR_PARTITION"]);

/**
 * Each partition's low and high watermarks, asked of its leader. kafkajs's `fetchTopicOffsets`
 * gives up at once on NOT_LEADER_FOR_PARTITION and keeps its stale metadata; but a leader moves
 * (a broker fenced for a missed heartbeat on a loaded machine, a rolling restart), and a partition
 * created a moment ago may not be served by its leader yet: seen in CI as "This server is not the
 * leader for that topic-partition" on the one-broker test cluster. So each try takes a new admin
 * (fresh metadata), and leader errors are waited out until `timeoutMs`.
 */
export async function topicOffsets(
  kafka: Pick<Kafka, "admin">,
  topic: string,
  options: TopicsWithLeadersOptions = {},
): Promise<Array<SeekEntry & { high: string; low: string }>> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(1_000, delay * 2)) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      return await admin.fetchTopicOffsets(topic);
    } catch (error) {
      const moving = findBrokerError(error, LEADER_MOVING);
      if (!moving) throw error;
      if (Date.now() >= deadline)
        throw new Error(`offsets of ${topic} not readable after ${timeoutMs} ms: ${moving.type}`, {
          cause: error,
        });
    } finally {
      await admin.disconnect();
    }
    await sleep(delay);
  }
}
