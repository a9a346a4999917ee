import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context } from "aws-lambda";
import type { Consumer } from "kafkajs";
import type { Telemetry } from "reliable-consumers";
import type { RetryLadder } from "reliable-consumers/kafka";
import { ladderTopics } from "../../lib/kafka/retryLadder.ts";
import { topicOffsets } from "../../lib/kafka/topicsWithLeaders.ts";
import type { MetricName } from "../../lib/observability/telemetry.ts";
import type { ConsumedRecord } from "../../local/src/services/kafka/mskEventBuilder.ts";
import {
  type CreatedTopic,
  createDeclaredTopics,
  type TopicDeclaration,
} from "../../local/src/services/kafka/topics.ts";
import { kafka } from "./clients.ts";

/** Telemetry that logs nothing and counts metrics in memory, so tests can assert on them. */
export function recordingTelemetry(): Telemetry & { counts: Partial<Record<MetricName, number>> } {
  const counts: Partial<Record<MetricName, number>> = {};
  return {
    logger: new Logger({ logLevel: "SILENT" }),
    metrics: { publishStoredMetrics() {} } as unknown as Metrics,
    logPayloads: false,
    counts,
    count(name, value = 1) {
      counts[name] = (counts[name] ?? 0) + value;
    },
  };
}

/** A Lambda context with a fixed amount of remaining time. */
export function lambdaContext(remainingMs = 60_000, functionName = "kafka-test"): Context {
  return { functionName, getRemainingTimeInMillis: () => remainingMs } as unknown as Context;
}

/** Partitions of a test topic that declares none: the mock's fixed count, so tests see the same shape on both. */
export const TEST_TOPIC_PARTITIONS = 4;

/**
 * Creates the topics a test produces to. The real cluster auto-creates nothing (as on MSK), so a
 * test creates its topics first, as a deployment would; on the mock this falls back to a metadata
 * request. A bare name gets TEST_TOPIC_PARTITIONS partitions and the cluster's replication.
 */
export async function declareTopics(
  topics: ReadonlyArray<string | TopicDeclaration>,
): Promise<CreatedTopic[]> {
  const admin = kafka("declare-topics").admin();
  await admin.connect();
  try {
    // A bare name that exists already is only checked for existence (a tap of a declared topic).
    const existing = new Set(topics.some((t) => typeof t === "string") ? await admin.listTopics() : []);
    return await createDeclaredTopics(
      admin,
      topics.map((t) =>
        typeof t !== "string"
          ? t
          : existing.has(t)
            ? { name: t }
            : { name: t, partitions: TEST_TOPIC_PARTITIONS },
      ),
    );
  } finally {
    await admin.disconnect();
  }
}

/** Records in a topic, from its leaders' watermarks (no consumer, so no wait for one to catch up). */
export async function recordsIn(topic: string): Promise<number> {
  const offsets = await topicOffsets(kafka("records-in"), topic);
  return offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
}

/** A main topic and every topic of its retry ladder (retry topics, then the DLQ). */
export function declareLadder(ladder: RetryLadder, baseTopic: string): Promise<CreatedTopic[]> {
  const { retry, deadLetter } = ladderTopics(ladder, baseTopic);
  return declareTopics([baseTopic, ...retry, deadLetter]);
}

/**
 * One consumer-group consumer subscribed to several topics from the beginning, buffering what
 * arrives per topic, so a test joins a group once (the slow part on the mock) and then takes
 * records topic by topic as a Lambda event source mapping would get them.
 */
export interface TopicTap {
  take(topic: string, count: number, timeoutMs?: number): Promise<ConsumedRecord[]>;
  /** What arrived and was not taken yet. */
  pending(topic: string): number;
  stop(): Promise<void>;
}

export async function tapTopics(topics: string[], groupId: string): Promise<TopicTap> {
  const client = kafka("tap");
  // Make the topics exist first (the ones a test declared already are found and checked).
  await declareTopics(topics);
  const consumer: Consumer = client.consumer({
    groupId,
    sessionTimeout: 6_000,
    rebalanceTimeout: 1_000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 50,
  });
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });
  const buffers = new Map<string, ConsumedRecord[]>(topics.map((t) => [t, []]));
  const waiters = new Set<() => void>();
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      buffers.get(topic)?.push({ topic, partition, message });
      for (const w of waiters) w();
    },
  });
  return {
    async take(topic, count, timeoutMs = 20_000) {
      const buffer = buffers.get(topic);
      if (!buffer) throw new Error(`not tapping ${topic}`);
      if (buffer.length < count) {
        await new Promise<void>((resolve, reject) => {
          const check = () => {
            if (buffer.length >= count) {
              clearTimeout(timer);
              waiters.delete(check);
              resolve();
            }
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            reject(new Error(`${topic}: got ${buffer.length} of ${count} records`));
          }, timeoutMs);
          waiters.add(check);
        });
      }
      return buffer.splice(0, count);
    },
    pending: (topic) => buffers.get(topic)?.length ?? 0,
    stop: () => consumer.disconnect(),
  };
}

/** A record as it lies on the broker, headers in their wire order (kafkajs reads them into an object). */
export interface WireRecord {
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: string | null;
  /** Every header, in order: `[name, value]`. */
  readonly headers: Array<[string, string]>;
}

/**
 * Every record of `topic`, read with kcat (librdkafka), which keeps a record's headers as the list
 * they are on the wire; a kafkajs consumer folds them into an object, repeated names into arrays.
 */
export async function wireRecords(topic: string): Promise<WireRecord[]> {
  const brokers = process.env.KAFKA_BROKERS ?? "";
  const { stdout } = await promisify(execFile)(
    "kcat",
    ["-C", "-b", brokers, "-t", topic, "-o", "beginning", "-e", "-J", "-q"],
    { timeout: 30_000 },
  );
  return stdout
    .split("\n")
    .filter((l) => l.trim().startsWith("{"))
    .map((l) => {
      const r = JSON.parse(l) as {
        partition: number;
        offset: number;
        key: string | null;
        payload: string | null;
        headers?: string[];
      };
      const headers: Array<[string, string]> = [];
      for (let i = 0; i + 1 < (r.headers ?? []).length; i += 2)
        headers.push([r.headers![i]!, r.headers![i + 1]!]);
      return { partition: r.partition, offset: r.offset, key: r.key, value: r.payload, headers };
    });
}
