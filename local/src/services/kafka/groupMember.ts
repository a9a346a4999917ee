/**
 * The Kafka mapping's member of its consumer group (the mapping's ConsumerGroupId, else its UUID),
 * subscribed to its topics from the StartingPosition, consuming its partitions concurrently with
 * offsets committed by hand. kafkajs gives up on some errors (e.g. a rebalance that fails while a
 * broker is away) and leaves the member stopped; Lambda's poller never does, so a crashed member is
 * replaced by a new one.
 */
import type { Consumer, EachBatchPayload, Kafka } from "kafkajs";
import { findBrokerError } from "reliable-consumers/kafka";
import type { KafkaMapping } from "../../runtime/model.ts";
import type { EventSourceStats } from "../sqs/eventSource.ts";

/** How often a member heartbeats, in ms, in the group and while its invocations run. */
export const HEARTBEAT_INTERVAL_MS = 1_000;
const SESSION_TIMEOUT_MS = 10_000;
/** How long a new member waits to be in the group before it starts regardless, in ms. */
const JOIN_WAIT_MS = 15_000;
/** Lambda's pollers: at most this many partitions' batches in flight at once. */
const MAX_CONCURRENT_PARTITIONS = 10;
const GROUP_ERRORS = new Set([
  "REBALANCE_IN_PROGRESS",
  "NOT_COORDINATOR_FOR_GROUP",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
]);

/** The consumer-group error (rebalance, unknown member) inside a kafkajs wrapper, if that is what it is. */
export function groupError(error: unknown): Error | undefined {
  return findBrokerError(error, GROUP_ERRORS);
}

/** How many partitions of `topics` a member consumes at once: one per partition, 1 to 10. */
export async function partitionConcurrency(kafka: Kafka, topics: readonly string[]): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  let partitions = 0;
  try {
    const md = await admin.fetchTopicMetadata({ topics: [...topics] });
    for (const t of md.topics) partitions += t.partitions.length;
  } finally {
    await admin.disconnect();
  }
  return Math.max(1, Math.min(partitions, MAX_CONCURRENT_PARTITIONS));
}

/** What a member is made with. */
export interface GroupMemberOptions {
  readonly kafka: Kafka;
  readonly mapping: KafkaMapping;
  /** The function's timeout: a rebalance waits for its invocations. */
  readonly functionTimeoutSeconds: number;
  /** Partitions consumed at once (`partitionConcurrency`). */
  readonly concurrency: number;
  /** `restarts` counts the members that replaced a crashed one. */
  readonly stats: EventSourceStats;
  /** Aborted when the mapping stops: no member replaces a crashed one from then on. */
  readonly signal: AbortSignal;
  pause(ms: number): Promise<void>;
  /** Each member's consumer as soon as it exists (the mapping's stop disconnects the latest). */
  onConsumer(consumer: Consumer): void;
  /** One fetched batch of one partition, on `consumer`. */
  eachBatch(payload: EachBatchPayload, consumer: Consumer): Promise<void>;
}

/** Joins the group as a new member and runs it; resolves once it joined (or after 15 s). */
export async function joinGroup(options: GroupMemberOptions): Promise<void> {
  const { mapping } = options;
  const c = options.kafka.consumer({
    groupId: mapping.consumerGroupId,
    maxWaitTimeInMs: Math.max(100, mapping.maxBatchingWindowSeconds * 1000),
    // The member heartbeats while its invocations run (partitionBatch.ts), so the session need not
    // outlast the function timeout. It is short because a rebalance costs about a session:
    // the Kafka mock waits sessionTimeout - 1 s for every join, even when all members are in.
    sessionTimeout: SESSION_TIMEOUT_MS,
    rebalanceTimeout: Math.max(60_000, options.functionTimeoutSeconds * 1000 + 10_000),
    heartbeatInterval: HEARTBEAT_INTERVAL_MS,
    allowAutoTopicCreation: false,
  });
  options.onConsumer(c);
  c.on(c.events.CRASH, ({ payload }) => {
    if (payload.restart || options.signal.aborted) return;
    process.emitWarning(`${mapping.logicalId}: consumer stopped (${payload.error.message}); rejoining`);
    options.stats.restarts++;
    void replace(c, options);
  });
  await c.connect();
  await c.subscribe({
    topics: [...mapping.topics],
    fromBeginning: mapping.startingPosition === "TRIM_HORIZON",
  });
  const joined = new Promise<void>((resolve) => {
    c.on(c.events.GROUP_JOIN, () => resolve());
    setTimeout(resolve, JOIN_WAIT_MS).unref();
  });
  await c.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: options.concurrency,
    eachBatch: (payload) => options.eachBatch(payload, c),
  });
  await joined;
}

/** A new member in place of the crashed one, tried every second until one joins or the mapping stops. */
async function replace(crashed: Consumer, options: GroupMemberOptions): Promise<void> {
  await crashed.disconnect().catch(() => undefined);
  while (!options.signal.aborted) {
    try {
      await joinGroup(options);
      return;
    } catch (error) {
      process.emitWarning(`${options.mapping.logicalId}: rejoin failed: ${(error as Error).message}`);
      await options.pause(1_000);
    }
  }
}
