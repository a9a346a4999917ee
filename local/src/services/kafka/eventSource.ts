import { setTimeout as sleep } from "node:timers/promises";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Consumer, Kafka, KafkaMessage, Producer } from "kafkajs";
import { findBrokerError } from "reliable-consumers/kafka";
import type { KafkaMapping } from "../../runtime/model.ts";
import { runStreamBatch, type StreamClock } from "../dynamodb/streamMapping.ts";
import { filterView, matchesAnyFilter } from "../lambda/eventFilter.ts";
import {
  type DiscardCondition,
  invocationRecord,
  kafkaDestinationMessage,
  sendToSqsDestination,
} from "../lambda/failureDestination.ts";
import type { FunctionHost, InvokeResult } from "../lambda/functionHost.ts";
import { type EventSource, newStats } from "../sqs/eventSource.ts";
import { toMskEvent } from "./mskEventBuilder.ts";
import type { DeserializedRecord, MappingDeserializer } from "./schemaRegistry.ts";

/** A record in the MSK event's JSON, for filtering: `value` decoded and parsed when it is JSON. */
function filterRecord(topic: string, partition: number, m: KafkaMessage): Record<string, unknown> {
  return {
    topic,
    partition,
    offset: Number(m.offset),
    timestamp: Number(m.timestamp),
    timestampType: "CREATE_TIME",
    ...(m.key ? { key: m.key.toString("base64") } : {}),
    ...(m.value ? { value: filterView(m.value.toString("utf8")) } : {}),
  };
}

/** The consumer-group error (rebalance, unknown member) inside a kafkajs wrapper, if that is what it is. */
export function groupError(error: unknown): Error | undefined {
  return findBrokerError(error, GROUP_ERRORS);
}
const SESSION_TIMEOUT_MS = 10_000;
const HEARTBEAT_INTERVAL_MS = 1_000;
const GROUP_ERRORS = new Set([
  "REBALANCE_IN_PROGRESS",
  "NOT_COORDINATOR_FOR_GROUP",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
]);

/**
 * The Amazon MSK event source mapping, as Lambda documents it, on the local Kafka cluster:
 * - a consumer group (the mapping's ConsumerGroupId, else its UUID) subscribed to its topics from
 *   the StartingPosition; partitions are consumed concurrently, each partition in order, one batch
 *   at a time;
 * - batches of up to BatchSize records of ONE partition, in the MSK event shape
 *   (`records["topic-partition"]`, base64 key and value, headers as byte arrays, `bootstrapServers`);
 * - records that match no filter are skipped (committed);
 * - offsets are committed only after the function succeeds for them;
 * - the mapping's rules (maximum record age, retries, bisection, partial responses naming
 *   `{ partition: "topic-partition", offset }`, the on-failure destination) are streamMapping.ts's;
 *   a `kafka://` topic gets one message per record in Lambda's documented format (the record's key;
 *   the failure metadata with the record under `payload`, `kafkaDestinationMessage`), SQS gets
 *   metadata only. A destination that refuses the write holds the partition until it takes it:
 *   nothing is committed past a record that is neither processed nor delivered;
 * - with a `SchemaRegistryConfig` (`deserializer`, kafkaSchemaRegistry.ts), each record's validated
 *   parts are deserialized through the registry before the filters and the function see them: the
 *   function gets them as JSON or SOURCE with the schema metadata, and a record that cannot be
 *   deserialized goes to the on-failure destination (`DESERIALIZATION_ERROR`, `SCHEMA_NOT_FOUND`)
 *   without an invocation.
 */
export function kafkaEventSource(
  mapping: KafkaMapping,
  host: FunctionHost,
  kafka: Kafka,
  sqs: SQSClient,
  clock: StreamClock = {},
  deserializer?: MappingDeserializer,
): EventSource {
  const stats = newStats();
  const abort = new AbortController();
  const fn = host.functionNamed(mapping.functionName);
  let consumer: Consumer | undefined;
  let producer: Producer | undefined;
  let inFlight = 0;
  const bootstrapServers = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);

  const pause = (ms: number) => sleep(ms, undefined, { signal: abort.signal }).catch(() => undefined);
  // What the mapping's registry made of each record it hands over (per message object: one batch's).
  const handedOf = new WeakMap<KafkaMessage, Extract<DeserializedRecord, { ok: true }>>();

  /**
   * Hands records Lambda gives up on to the on-failure destination. Nothing is dropped: a write the
   * destination refuses (the cluster away) is retried until it lands, the partition held meanwhile,
   * and only then may the caller commit past the records. `false` when the mapping stopped first.
   */
  const discard = async (
    topic: string,
    partition: number,
    messages: KafkaMessage[],
    condition: DiscardCondition,
    count: number,
    last?: InvokeResult,
  ): Promise<boolean> => {
    if (messages.length === 0) return true;
    const dest = mapping.onFailure;
    for (let attempt = 0; !abort.signal.aborted; attempt++) {
      try {
        if (dest?.kind === "kafka") {
          producer ??= kafka.producer({ allowAutoTopicCreation: false });
          await producer.connect();
          await producer.send({
            topic: dest.topic,
            acks: -1,
            messages: messages.map((message) =>
              kafkaDestinationMessage({
                functionArn: fn.arn,
                condition,
                approximateInvokeCount: count,
                ...(last ? { lastResult: last } : {}),
                eventSourceArn: mapping.clusterArn,
                bootstrapServers: bootstrapServers.join(","),
                record: { topic, partition, message },
              }),
            ),
          });
        } else {
          await sendToSqsDestination(
            sqs,
            dest,
            invocationRecord({
              functionArn: fn.arn,
              condition,
              approximateInvokeCount: count,
              ...(last ? { lastResult: last } : {}),
              batchInfoKey: "KafkaBatchInfo",
              batchInfo: {
                batchSize: messages.length,
                bootstrapServers: bootstrapServers.join(","),
                payloadSize: messages.reduce((n, m) => n + (m.value?.length ?? 0), 0),
                recordsInfo: {
                  [`${topic}-${partition}`]: {
                    firstRecordOffset: messages[0]!.offset,
                    firstRecordTimestamp: messages[0]!.timestamp,
                    lastRecordOffset: messages.at(-1)!.offset,
                    lastRecordTimestamp: messages.at(-1)!.timestamp,
                  },
                },
              },
            }),
          );
        }
        stats.discarded += messages.length;
        return true;
      } catch (error) {
        if (attempt === 0)
          process.emitWarning(
            `${mapping.logicalId}: on-failure destination refused ${messages.length} record(s), retrying: ${(error as Error).message}`,
          );
        await pause(Math.min(5_000, 200 * 2 ** Math.min(attempt, 5)));
      }
    }
    return false;
  };

  /**
   * The records of a fetch the function may see: all of them without a schema registry; with one,
   * those whose validated parts deserialize (`handedOf` holds what the function gets of each),
   * the others sent to the on-failure destination first, with Lambda's reason code, before anything
   * later is committed. A registry that cannot answer holds the partition until it does.
   * `undefined` when the mapping stopped or the partition was revoked meanwhile.
   */
  const deserialized = async (
    topic: string,
    partition: number,
    messages: KafkaMessage[],
    revoked: () => boolean,
  ): Promise<KafkaMessage[] | undefined> => {
    if (!deserializer) return messages;
    const out: KafkaMessage[] = [];
    const refused = new Map<DiscardCondition, KafkaMessage[]>();
    for (const m of messages) {
      let d: DeserializedRecord | undefined;
      for (let attempt = 0; d === undefined; attempt++) {
        if (revoked()) return undefined;
        try {
          d = await deserializer.deserialize(m);
        } catch (error) {
          if (attempt === 0)
            process.emitWarning(
              `${mapping.logicalId}: schema registry unavailable, holding ${topic}-${partition}: ${(error as Error).message}`,
            );
          await pause(Math.min(5_000, 200 * 2 ** Math.min(attempt, 5)));
        }
      }
      if (d.ok) {
        handedOf.set(m, d);
        out.push(m);
      } else refused.set(d.condition, [...(refused.get(d.condition) ?? []), m]);
    }
    for (const [condition, list] of refused)
      if (!(await discard(topic, partition, list, condition, 0))) return undefined;
    return out;
  };

  /** One chunk through Lambda's stream rules (streamMapping.ts); `commit(next)` after each settled prefix. */
  const processChunk = (
    topic: string,
    partition: number,
    chunk: KafkaMessage[],
    commit: (nextOffset: string) => Promise<void>,
    revoked: () => boolean,
  ) => {
    const partitionKey = `${topic}-${partition}`;
    return runStreamBatch(chunk, {
      mapping,
      stats,
      ageSeconds: (m, nowMs) => (nowMs - Number(m.timestamp)) / 1000,
      ...clock,
      invoke: (messages) =>
        host.invoke(mapping.functionName, {
          ...toMskEvent(
            messages.map((message) => {
              // What the registry made of it (its parts and schema metadata), or the record as polled.
              const { ok: _, ...handed } = handedOf.get(message) ?? { ok: true, message };
              return { topic, partition, ...handed };
            }),
            { eventSourceArn: mapping.clusterArn },
          ),
          bootstrapServers: bootstrapServers.join(","),
        }),
      // `{ partition: "topic-partition", offset }`; one that names no record of the batch fails it whole.
      failedIndex: (f, messages) => {
        const id = (f as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)
          ?.itemIdentifier;
        return id?.partition === partitionKey
          ? messages.findIndex((m) => Number(m.offset) === Number(id.offset))
          : -1;
      },
      discard: (messages, condition, count, last) =>
        discard(topic, partition, [...messages], condition, count, last),
      // Offsets are committed only after the function succeeds for them (or gives them up).
      settled: (done, rest) =>
        commit(rest.length > 0 ? rest[0]!.offset : String(Number(done.at(-1)!.offset) + 1)),
      // After a rebalance the partition may belong to another member: stop retrying it here.
      stopped: () => abort.signal.aborted || revoked(),
      pause,
    });
  };

  return {
    mapping,
    stats,
    async start() {
      const admin = kafka.admin();
      await admin.connect();
      let partitions = 0;
      try {
        const md = await admin.fetchTopicMetadata({ topics: [...mapping.topics] });
        for (const t of md.topics) partitions += t.partitions.length;
      } finally {
        await admin.disconnect();
      }
      const concurrency = Math.max(1, Math.min(partitions, 10));
      host.requestConcurrency(mapping.functionName, concurrency);
      const windowMs = Math.max(100, mapping.maxBatchingWindowSeconds * 1000);
      const member = async () => {
        consumer = kafka.consumer({
          groupId: mapping.consumerGroupId,
          maxWaitTimeInMs: windowMs,
          // The member heartbeats while its invocations run (below), so the session need not
          // outlast the function timeout. It is short because a rebalance costs about a session:
          // the Kafka mock waits sessionTimeout - 1 s for every join, even when all members are in.
          sessionTimeout: SESSION_TIMEOUT_MS,
          rebalanceTimeout: Math.max(60_000, fn.timeoutSeconds * 1000 + 10_000),
          heartbeatInterval: HEARTBEAT_INTERVAL_MS,
          allowAutoTopicCreation: false,
        });
        const c = consumer;
        // kafkajs gives up on some errors (e.g. a rebalance that fails while a broker is away) and
        // leaves the member stopped; Lambda's poller never does: start a new member.
        c.on(c.events.CRASH, ({ payload }) => {
          if (payload.restart || abort.signal.aborted) return;
          process.emitWarning(`${mapping.logicalId}: consumer stopped (${payload.error.message}); rejoining`);
          stats.restarts++;
          void (async () => {
            await c.disconnect().catch(() => undefined);
            while (!abort.signal.aborted) {
              try {
                await member();
                return;
              } catch (error) {
                process.emitWarning(`${mapping.logicalId}: rejoin failed: ${(error as Error).message}`);
                await pause(1_000);
              }
            }
          })();
        });
        await c.connect();
        await c.subscribe({
          topics: [...mapping.topics],
          fromBeginning: mapping.startingPosition === "TRIM_HORIZON",
        });
        const joined = new Promise<void>((resolve) => {
          c.on(c.events.GROUP_JOIN, () => resolve());
          setTimeout(resolve, 15_000).unref();
        });
        await c.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: concurrency,
          eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
            const { topic, partition } = batch;
            const commit = async (offset: string) => {
              resolveOffset(String(Number(offset) - 1));
              try {
                await c.commitOffsets([{ topic, partition, offset }]);
              } catch (error) {
                // kafkajs wraps a rebalance answer to OffsetCommit in a non-retriable error, and one
                // escaping eachBatch crashes the member (a new member then waits out the group's
                // rebalance). Rethrown bare, the runner rejoins with the same member id; the records
                // whose commit was refused are delivered again (the handlers are idempotent).
                throw groupError(error) ?? error;
              }
            };
            // kafkajs heartbeats only when asked; an invocation can run for the function timeout.
            let lost: Error | undefined;
            const beating = setInterval(() => {
              heartbeat().catch((error: unknown) => {
                lost ??= groupError(error);
              });
            }, HEARTBEAT_INTERVAL_MS);
            const revoked = () => lost !== undefined || !isRunning() || isStale() || abort.signal.aborted;
            inFlight++;
            try {
              const handed = await deserialized(topic, partition, batch.messages, revoked);
              if (!handed) return;
              const pass: KafkaMessage[] = [];
              for (const m of handed) {
                const seen = handedOf.get(m)?.message ?? m;
                if (matchesAnyFilter(mapping.filters, filterRecord(topic, partition, seen))) pass.push(m);
                else stats.filtered++;
              }
              for (let i = 0; i < pass.length; i += mapping.batchSize) {
                if (revoked()) break;
                await processChunk(topic, partition, pass.slice(i, i + mapping.batchSize), commit, revoked);
                await heartbeat();
              }
              // Filtered records at the end of the fetch are processed too.
              const last = batch.messages.at(-1);
              if (last && !revoked()) await commit(String(Number(last.offset) + 1));
              // The group moved on: rejoin now (the runner does, with this member id) rather than
              // at the next fetch; the uncommitted records go to the partition's next owner.
              if (lost) throw lost;
            } finally {
              clearInterval(beating);
              inFlight--;
            }
          },
        });
        await joined;
      };
      await member();
    },
    async stop() {
      abort.abort();
      await consumer?.disconnect().catch(() => undefined);
      await producer?.disconnect().catch(() => undefined);
    },
    inFlight: () => inFlight,
  };
}
