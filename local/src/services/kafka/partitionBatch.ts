/**
 * One fetched batch of one partition, as Lambda's MSK poller handles it: the records the function
 * may see (handedRecords.ts), in chunks of BatchSize through the stream rules (partitionSource.ts),
 * the offset committed after each settled prefix and past filtered records at the end. The member
 * heartbeats throughout (kafkajs heartbeats only when asked, and an invocation can run for the
 * function timeout); once the group moved on, the partition is left to its next owner.
 */
import type { Consumer, EachBatchPayload } from "kafkajs";
import { runStreamBatch } from "../dynamodb/streamMapping.ts";
import { groupError, HEARTBEAT_INTERVAL_MS } from "./groupMember.ts";
import { deserializeFetch, filterFetch } from "./handedRecords.ts";
import { type KafkaMappingScope, partitionSource } from "./partitionSource.ts";
import type { MappingDeserializer } from "./schemaRegistry.ts";

/** What a partition's batch needs beyond the mapping's shared stages. */
export interface PartitionBatchScope extends KafkaMappingScope {
  /** The mapping's schema registry deserializer, when it has a `SchemaRegistryConfig`. */
  readonly deserializer: MappingDeserializer | undefined;
}

/**
 * Commits `offset` (the next to read) for the partition. A refused commit is rethrown as the bare
 * group error: kafkajs wraps a rebalance answer to OffsetCommit in a non-retriable error, and one
 * escaping eachBatch crashes the member (a new member then waits out the group's rebalance).
 * Rethrown bare, the runner rejoins with the same member id; the records whose commit was refused
 * are delivered again (the handlers are idempotent).
 */
function partitionCommit(
  consumer: Consumer,
  { batch, resolveOffset }: Pick<EachBatchPayload, "batch" | "resolveOffset">,
): (offset: string) => Promise<void> {
  const { topic, partition } = batch;
  return async (offset) => {
    resolveOffset(String(Number(offset) - 1));
    try {
      await consumer.commitOffsets([{ topic, partition, offset }]);
    } catch (error) {
      throw groupError(error) ?? error;
    }
  };
}

/** Runs one fetched batch on `consumer`; throws the group's error when the member lost the partition. */
export async function runPartitionBatch(
  payload: EachBatchPayload,
  consumer: Consumer,
  scope: PartitionBatchScope,
): Promise<void> {
  const { batch, heartbeat, isRunning, isStale } = payload;
  const { topic, partition } = batch;
  const { mapping, stats } = scope;
  const commit = partitionCommit(consumer, payload);
  let lost: Error | undefined;
  const beating = setInterval(() => {
    heartbeat().catch((error: unknown) => {
      lost ??= groupError(error);
    });
  }, HEARTBEAT_INTERVAL_MS);
  const revoked = () => lost !== undefined || !isRunning() || isStale() || scope.signal.aborted;
  try {
    const handed = await deserializeFetch(topic, partition, batch.messages, revoked, {
      ...scope,
      logicalId: mapping.logicalId,
    });
    if (!handed) return;
    const { pass, filtered } = filterFetch(mapping.filters, topic, partition, handed, scope.handed);
    stats.filtered += filtered;
    for (let i = 0; i < pass.length; i += mapping.batchSize) {
      if (revoked()) break;
      const chunk = pass.slice(i, i + mapping.batchSize);
      await runStreamBatch(chunk, partitionSource(scope, topic, partition, commit, revoked));
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
  }
}
