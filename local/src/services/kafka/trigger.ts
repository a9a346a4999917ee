import type { Context } from "aws-lambda";
import { type Consumer, Kafka, logLevel } from "kafkajs";
import type { KafkaBatchResponse, MskEventJson } from "reliable-consumers/kafka";
import { type KafkaConnectionConfig, kafkaConfigFromEnv, toKafkaJsConfig } from "reliable-consumers/kafka";
import { toMskEvent } from "./mskEventBuilder.ts";

/** Options of `startLocalKafkaTrigger`: the topic, the group, the handler. */
export interface LocalKafkaTriggerOptions {
  /** The topic the mapping reads, from its beginning on the group's first start. */
  readonly topic: string;
  /** The event source mapping's consumer group. */
  readonly groupId: string;
  /**
   * The function's handler: gets the MSK event; a `{ batchItemFailures }` answer is a partial
   * response, anything else success, a throw a function error.
   */
  readonly handler: (
    event: MskEventJson,
    context: Context,
  ) => Promise<KafkaBatchResponse | undefined | unknown>;
  /** How to reach the brokers. @default kafkaConfigFromEnv() (`KAFKA_BROKERS` and the rest) */
  readonly connection?: KafkaConnectionConfig;
  /** The most records per invocation (within one fetched partition batch). @default 100 */
  readonly batchSize?: number;
  /** The function timeout the handler sees as remaining time, in ms. @default 60000 */
  readonly timeoutMs?: number;
  /** Pause before redelivering after a failure (Lambda's own retry backoff), in ms. @default 200 */
  readonly retryDelayMs?: number;
  /**
   * The function's name: the context's `functionName` and the Kafka client id.
   * @default "local" (client id `local-kafka-trigger`)
   */
  readonly functionName?: string;
  /** Called after each invocation with its event and its response or error. @default none */
  readonly onInvoke?: (info: { event: MskEventJson; response?: unknown; error?: unknown }) => void;
}

/** A running `startLocalKafkaTrigger`. */
export interface LocalKafkaTrigger {
  /** The mapping's kafkajs consumer (its group member). */
  readonly consumer: Consumer;
  /** Leaves the group and disconnects; offsets committed so far stay with the group. */
  stop(): Promise<void>;
}

/**
 * Lambda's Kafka event source mapping, locally, on a real (mock) cluster: a consumer group reads the
 * topic, each fetched partition batch becomes an MSK event, and the handler's answer moves the
 * committed offset the way Lambda does:
 *
 * - success, or a partial response without this partition: the whole batch is committed;
 * - a partial response naming `{ partition, offset }`: offsets before it are committed and the
 *   partition is re-read from it;
 * - an error: nothing is committed and the batch is re-read.
 *
 * The same handler file runs here and on AWS. It retries a failed batch without limit and does not
 * bisect: it is the mapping of a test (the local runtime's Kafka mappings play the rest).
 */
export async function startLocalKafkaTrigger(options: LocalKafkaTriggerOptions): Promise<LocalKafkaTrigger> {
  const kafka = new Kafka({
    ...toKafkaJsConfig(options.connection ?? kafkaConfigFromEnv()),
    clientId: options.functionName ?? "local-kafka-trigger",
    logLevel: logLevel.NOTHING,
  });
  const consumer = kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: 10_000,
    rebalanceTimeout: 2_000,
    heartbeatInterval: 1_000,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  await consumer.subscribe({ topic: options.topic, fromBeginning: true });
  const timeoutMs = options.timeoutMs ?? 60_000;
  const batchSize = options.batchSize ?? 100;
  await consumer.run({
    eachBatchAutoResolve: false,
    autoCommit: true,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      for (let start = 0; start < batch.messages.length; start += batchSize) {
        if (!isRunning() || isStale()) return;
        const messages = batch.messages.slice(start, start + batchSize);
        const event = toMskEvent(
          messages.map((message) => ({ topic: batch.topic, partition: batch.partition, message })),
        );
        const deadline = Date.now() + timeoutMs;
        const context = {
          functionName: options.functionName ?? "local",
          getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
        } as unknown as Context;
        let response: unknown;
        try {
          response = await options.handler(event, context);
          options.onInvoke?.({ event, response });
        } catch (error) {
          options.onInvoke?.({ event, error });
          await new Promise((r) => setTimeout(r, options.retryDelayMs ?? 200));
          consumer.seek({ topic: batch.topic, partition: batch.partition, offset: messages[0]!.offset });
          return;
        }
        const failures = (response as Partial<KafkaBatchResponse> | undefined)?.batchItemFailures ?? [];
        const mine = failures.find((f) => f.itemIdentifier.partition === `${batch.topic}-${batch.partition}`);
        if (mine) {
          const at = BigInt(mine.itemIdentifier.offset);
          for (const m of messages) if (BigInt(m.offset) < at) resolveOffset(m.offset);
          await heartbeat();
          await new Promise((r) => setTimeout(r, options.retryDelayMs ?? 200));
          consumer.seek({ topic: batch.topic, partition: batch.partition, offset: String(at) });
          return;
        }
        for (const m of messages) resolveOffset(m.offset);
        await heartbeat();
      }
    },
  });
  return { consumer, stop: () => consumer.disconnect() };
}
