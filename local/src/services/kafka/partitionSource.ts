/**
 * A chunk of one Kafka partition as Lambda's stream rules see it (streamMapping.ts's `StreamSource`):
 * the MSK event it is invoked with, the `batchItemFailures` identifiers it answers with, the offset
 * it commits after each settled prefix, and the on-failure destination it discards to.
 */
import type { KafkaMessage } from "kafkajs";
import type { KafkaMapping } from "../../runtime/model.ts";
import type { StreamClock, StreamSource } from "../dynamodb/streamMapping.ts";
import type { FunctionHost } from "../lambda/functionHost.ts";
import type { EventSourceStats } from "../sqs/eventSource.ts";
import type { Discard } from "./failureSink.ts";
import type { HandedRecords } from "./handedRecords.ts";
import { toMskEvent } from "./mskEventBuilder.ts";

/** What the stages of one running Kafka mapping share. */
export interface KafkaMappingScope {
  readonly mapping: KafkaMapping;
  readonly host: FunctionHost;
  readonly stats: EventSourceStats;
  /** The clock a record's age is read by (MaximumRecordAgeInSeconds). */
  readonly clock: StreamClock;
  /** The brokers, comma-separated, as the MSK event's `bootstrapServers` names them. */
  readonly bootstrapServers: string;
  /** Aborted when the mapping stops. */
  readonly signal: AbortSignal;
  /** Waits `ms`, less when the mapping stops first. */
  pause(ms: number): Promise<void>;
  /** What the mapping's schema registry made of the records it handed over. */
  readonly handed: HandedRecords;
  /** The mapping's on-failure destination (failureSink.ts). */
  readonly discard: Discard;
}

/**
 * The index in `messages` of the record a `batchItemFailures` entry names:
 * `{ partition: "topic-partition", offset }`; -1 when it names no record of this partition's batch,
 * which fails the batch whole.
 */
export function failedIndexIn(
  partitionKey: string,
  failure: unknown,
  messages: readonly KafkaMessage[],
): number {
  const id = (failure as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)
    ?.itemIdentifier;
  return id?.partition === partitionKey
    ? messages.findIndex((m) => Number(m.offset) === Number(id.offset))
    : -1;
}

/**
 * The stream source of one chunk of `topic`-`partition`: `commit(next)` moves the partition's
 * offset past a settled prefix; `revoked()` says the partition may now belong to another member.
 */
export function partitionSource(
  scope: KafkaMappingScope,
  topic: string,
  partition: number,
  commit: (nextOffset: string) => Promise<void>,
  revoked: () => boolean,
): StreamSource<KafkaMessage> {
  const { mapping, host, handed } = scope;
  const partitionKey = `${topic}-${partition}`;
  return {
    mapping,
    stats: scope.stats,
    ageSeconds: (m, nowMs) => (nowMs - Number(m.timestamp)) / 1000,
    ...scope.clock,
    invoke: (messages) =>
      host.invoke(mapping.functionName, {
        ...toMskEvent(
          messages.map((message) => {
            // What the registry made of it (its parts and schema metadata), or the record as polled.
            const { ok: _, ...record } = handed.get(message) ?? { ok: true, message };
            return { topic, partition, ...record };
          }),
          { eventSourceArn: mapping.clusterArn },
        ),
        bootstrapServers: scope.bootstrapServers,
      }),
    failedIndex: (f, messages) => failedIndexIn(partitionKey, f, messages),
    discard: (messages, condition, count, last) =>
      scope.discard(topic, partition, [...messages], condition, count, last),
    // Offsets are committed only after the function succeeds for them (or gives them up).
    settled: (done, rest) =>
      commit(rest.length > 0 ? rest[0]!.offset : String(Number(done.at(-1)!.offset) + 1)),
    // After a rebalance the partition may belong to another member: stop retrying it here.
    stopped: () => scope.signal.aborted || revoked(),
    pause: scope.pause,
  };
}
