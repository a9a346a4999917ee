import type { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Consumer, Kafka } from "kafkajs";
import { toMskEvent } from "../kafka/mskEventBuilder.ts";
import type { KafkaBatchResponse } from "../kafka/partialResponse.ts";
import { invokeFromQueue } from "../local/sqsTrigger.ts";
import { OUTBOX_STREAM_FILTER_PATTERN } from "../outbox/schema.ts";
import { createStreamPoller, type StreamPoller } from "../outbox/streamPoller.ts";
import type { FunctionEnvironment, FunctionPool, InvokeOutcome } from "./functionHost.ts";

/**
 * Lambda's event source mappings, driving function pools (child processes), made robust to the
 * faults chaos injects: a failed poll, a crashed environment or an unreachable service never stops
 * a trigger; it backs off and polls again, with Lambda's retry semantics for what was in flight.
 */
export interface Trigger {
  stop(): Promise<void>;
  /** Invocations that failed (error or crash) and polls that failed. */
  readonly stats: { invocations: number; failedInvocations: number; pollErrors: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function asHandlerResult(o: InvokeOutcome): unknown {
  if (o.ok) return o.value;
  throw Object.assign(new Error(o.error.message), { name: o.error.name });
}

/** SQS: `pollers` concurrent receive → invoke → delete loops (Lambda scales pollers the same way). */
export function startSqsTrigger(options: {
  sqs: SQSClient;
  pool: FunctionPool;
  queueUrl: string;
  queueArn: string;
  batchSize?: number;
  pollers?: number;
  onInvoke?: (event: { Records: Array<{ body: string }> }, pool: FunctionPool) => void;
}): Trigger {
  let running = true;
  const stats = { invocations: 0, failedInvocations: 0, pollErrors: 0 };
  const loop = async () => {
    while (running) {
      try {
        const r = await invokeFromQueue(
          options.sqs,
          async (event) => {
            stats.invocations++;
            options.onInvoke?.(event, options.pool);
            const outcome = await options.pool.invoke(event);
            if (!outcome.ok) stats.failedInvocations++;
            return asHandlerResult(outcome);
          },
          {
            queueUrl: options.queueUrl,
            queueArn: options.queueArn,
            functionName: options.pool.name,
            batchSize: options.batchSize ?? 10,
            waitSeconds: 1,
          },
        );
        if (r.received === 0) await sleep(50);
      } catch {
        stats.pollErrors++;
        await sleep(200);
      }
    }
  };
  const loops = Array.from({ length: options.pollers ?? 2 }, loop);
  return {
    stats,
    async stop() {
      running = false;
      await Promise.allSettled(loops);
    },
  };
}

/**
 * DynamoDB Streams: the relay's mapping (outbox filter, partial responses, bounded retries). A
 * poller that keeps failing (its iterators died with a restarted DynamoDB) is rebuilt from
 * TRIM_HORIZON: the relay republishes, consumers deduplicate. Records the mapping gives up on are
 * left to the sweeper, as in production.
 */
export function startStreamTrigger(options: {
  streams: () => DynamoDBStreamsClient;
  streamArn: string;
  pool: FunctionPool;
  batchSize?: number;
  maximumRetryAttempts?: number;
}): Trigger & { discarded(): number } {
  let running = true;
  let discarded = 0;
  const stats = { invocations: 0, failedInvocations: 0, pollErrors: 0 };
  const build = (): StreamPoller =>
    createStreamPoller({
      client: options.streams(),
      streamArn: options.streamArn,
      filterPattern: OUTBOX_STREAM_FILTER_PATTERN,
      batchSize: options.batchSize ?? 100,
      maximumRetryAttempts: options.maximumRetryAttempts ?? 5,
      onDiscard: (records) => {
        discarded += records.length;
      },
      handler: async (event) => {
        stats.invocations++;
        const outcome = await options.pool.invoke(event);
        if (!outcome.ok) stats.failedInvocations++;
        return asHandlerResult(outcome);
      },
    });
  const done = (async () => {
    let poller = build();
    let consecutiveErrors = 0;
    while (running) {
      try {
        await poller.drain({ maxRounds: 5 });
        consecutiveErrors = 0;
        await sleep(100);
      } catch {
        stats.pollErrors++;
        consecutiveErrors++;
        if (consecutiveErrors >= 5) {
          poller = build();
          consecutiveErrors = 0;
        }
        await sleep(300);
      }
    }
  })();
  return {
    stats,
    discarded: () => discarded,
    async stop() {
      running = false;
      await done;
    },
  };
}

/** A scheduled function (the sweeper): invoked every `everyMs`. */
export function startSchedule(pool: FunctionPool, everyMs: number): Trigger {
  let running = true;
  const stats = { invocations: 0, failedInvocations: 0, pollErrors: 0 };
  const done = (async () => {
    while (running) {
      await sleep(everyMs);
      if (!running) break;
      stats.invocations++;
      const o = await pool.invoke({ source: "aws.events", "detail-type": "Scheduled Event" });
      if (!o.ok) stats.failedInvocations++;
    }
  })();
  return {
    stats,
    async stop() {
      running = false;
      await done;
    },
  };
}

/**
 * Kafka (MSK) event source mapping on one topic: a consumer-group member whose partition batches
 * become MSK events; offsets move the way Lambda moves them (all, up to the reported failure, or
 * none on a function error). Several members with one `groupId` share the partitions, and adding
 * or removing one makes the group rebalance.
 */
export async function startKafkaTrigger(options: {
  kafka: Kafka;
  topic: string;
  groupId: string;
  pool: FunctionPool;
  batchSize?: number;
  timeoutMs?: number;
  /** Called once the invocation has its environment; the returned function runs when it ends. */
  onEnvironment?: (event: ReturnType<typeof toMskEvent>, env: FunctionEnvironment) => () => void;
}): Promise<Trigger & { consumer: Consumer }> {
  const stats = { invocations: 0, failedInvocations: 0, pollErrors: 0 };
  const consumer = options.kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: 6_000,
    rebalanceTimeout: 3_000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
    retry: { retries: 20, initialRetryTime: 200, maxRetryTime: 2_000 },
  });
  consumer.on(consumer.events.CRASH, () => {
    stats.pollErrors++;
  });
  await consumer.connect();
  await consumer.subscribe({ topic: options.topic, fromBeginning: true });
  const batchSize = options.batchSize ?? 100;
  await consumer.run({
    // Lambda's Kafka poller invokes one batch per partition at a time, partitions side by side.
    partitionsConsumedConcurrently: 8,
    eachBatchAutoResolve: false,
    autoCommit: true,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      for (let start = 0; start < batch.messages.length; start += batchSize) {
        if (!isRunning() || isStale()) return;
        const messages = batch.messages.slice(start, start + batchSize);
        const event = toMskEvent(
          messages.map((message) => ({ topic: batch.topic, partition: batch.partition, message })),
        );
        stats.invocations++;
        let done: (() => void) | undefined;
        // Lambda's poller stays in the group while the function runs (a retry rung may wait
        // tens of seconds for its records to come due): keep heartbeating meanwhile.
        const beat = setInterval(() => {
          heartbeat().catch(() => {});
        }, 1_000);
        const outcome = await options.pool
          .invoke(event, (env) => {
            done = options.onEnvironment?.(event, env);
          })
          .finally(() => {
            clearInterval(beat);
            done?.();
          });
        if (!outcome.ok) {
          stats.failedInvocations++;
          await sleep(300);
          consumer.seek({ topic: batch.topic, partition: batch.partition, offset: messages[0]!.offset });
          return;
        }
        const failures = (outcome.value as Partial<KafkaBatchResponse> | null)?.batchItemFailures ?? [];
        const mine = failures.find((f) => f.itemIdentifier.partition === `${batch.topic}-${batch.partition}`);
        if (mine) {
          const at = BigInt(mine.itemIdentifier.offset);
          for (const m of messages) if (BigInt(m.offset) < at) resolveOffset(m.offset);
          await heartbeat().catch(() => {});
          await sleep(300);
          consumer.seek({ topic: batch.topic, partition: batch.partition, offset: String(at) });
          return;
        }
        for (const m of messages) resolveOffset(m.offset);
        await heartbeat().catch(() => {});
      }
    },
  });
  return {
    consumer,
    stats,
    stop: () => consumer.disconnect().catch(() => {}),
  };
}
