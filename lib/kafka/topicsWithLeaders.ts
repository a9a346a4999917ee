import { setTimeout as sleep } from "node:timers/promises";
import type { Admin, ITopicConfig } from "kafkajs";

/** What a broker answers for a topic it does not know yet, or whose partitions have no leader yet. */
const NOT_YET = new Set(["UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE"]);

/** The kafkajs error type inside its retry wrappers (`cause`, `originalError`), if any. */
function errorType(error: unknown): string | undefined {
  for (let e = error as Record<string, unknown> | undefined, depth = 0; e && depth < 5; depth++) {
    if (typeof e.type === "string") return e.type;
    e = (e.originalError ?? e.cause) as Record<string, unknown> | undefined;
  }
  return undefined;
}

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
      const type = errorType(error);
      if (!type || !NOT_YET.has(type)) throw error;
      waiting = type;
    }
    if (Date.now() >= deadline)
      throw new Error(
        `topics ${names.join(", ")} not ready after ${options.timeoutMs ?? 30_000} ms: ${waiting}`,
      );
    await sleep(delay);
  }
}
