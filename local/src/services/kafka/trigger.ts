import type { Context } from "aws-lambda";
import { type Consumer, Kafka, logLevel } from "kafkajs";
import type { KafkaBatchResponse, MskEventJson } from "reliable-consumers/kafka";
import { type KafkaConnectionConfig, kafkaConfigFromEnv, toKafkaJsConfig } from "reliable-consumers/kafka";
import { toMskEvent } from "./mskEventBuilder.ts";

export interface LocalKafkaTriggerOptions {
  readonly topic: string;
  /** The event source mapping's consumer group. */
  readonly groupId: string;
  readonly handler: (
    event: MskEventJson,
    context: Context,
  ) => Promise<KafkaBatchResponse | undefined | unknown>;
  readonly connection?: KafkaConnectionConfig;
  /** Records per invocation (per partition batch, as the mock delivers them). @default 100 */
  readonly batchSize?: number;
  /** The function timeout the handler sees as remaining time. @default 60000 ms */
  readonly timeoutMs?: number;
  /** Pause before redelivering after a failure (Lambda's own retry backoff). @default 200 ms */
  readonly retryDelayMs?: number;
  readonly functionName?: string;
  readonly onInvoke?: (info: { event: MskEventJson; response?: unknown; error?: unknown }) => void;
}

export interface LocalKafkaTrigger {
  readonly consumer: Consumer;
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
 * The same handler file runs here and on AWS. Used by tests and the local runtime.
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
