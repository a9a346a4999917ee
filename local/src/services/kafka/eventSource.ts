import { setTimeout as sleep } from "node:timers/promises";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Consumer, Kafka } from "kafkajs";
import type { KafkaMapping } from "../../runtime/model.ts";
import type { StreamClock } from "../dynamodb/streamMapping.ts";
import type { FunctionHost } from "../lambda/functionHost.ts";
import { type EventSource, newStats } from "../sqs/eventSource.ts";
import { createFailureSink } from "./failureSink.ts";
import { joinGroup, partitionConcurrency } from "./groupMember.ts";
import type { HandedRecords } from "./handedRecords.ts";
import { type PartitionBatchScope, runPartitionBatch } from "./partitionBatch.ts";
import type { MappingDeserializer } from "./schemaRegistry.ts";

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
 * - with a `SchemaRegistryConfig` (`deserializer`, schemaRegistry.ts), each record's validated
 *   parts are deserialized through the registry before the filters and the function see them: the
 *   function gets them as JSON or SOURCE with the schema metadata, and a record that cannot be
 *   deserialized goes to the on-failure destination (`DESERIALIZATION_ERROR`, `SCHEMA_NOT_FOUND`)
 *   without an invocation.
 *
 * The stages, one module each: the group member (groupMember.ts), one fetched partition batch
 * (partitionBatch.ts), the records the function is handed (handedRecords.ts), a chunk under the
 * stream rules (partitionSource.ts), the on-failure destination (failureSink.ts) and the hold
 * while a destination or registry refuses (retryHolding.ts). This module wires them.
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
  const bootstrapServers = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean).join(",");
  const pause = (ms: number) => sleep(ms, undefined, { signal: abort.signal }).catch(() => undefined);
  const sink = createFailureSink({
    mapping,
    functionArn: fn.arn,
    kafka,
    sqs,
    bootstrapServers,
    stats,
    signal: abort.signal,
    pause,
  });
  const scope: PartitionBatchScope = {
    mapping,
    host,
    stats,
    clock,
    bootstrapServers,
    signal: abort.signal,
    pause,
    // What the mapping's registry made of each record it hands over (per message object: one batch's).
    handed: new WeakMap() as HandedRecords,
    discard: sink.discard,
    deserializer,
  };
  let consumer: Consumer | undefined;
  let inFlight = 0;

  return {
    mapping,
    stats,
    async start() {
      const concurrency = await partitionConcurrency(kafka, mapping.topics);
      host.requestConcurrency(mapping.functionName, concurrency);
      await joinGroup({
        kafka,
        mapping,
        functionTimeoutSeconds: fn.timeoutSeconds,
        concurrency,
        stats,
        signal: abort.signal,
        pause,
        onConsumer: (c) => {
          consumer = c;
        },
        eachBatch: async (payload, c) => {
          inFlight++;
          try {
            await runPartitionBatch(payload, c, scope);
          } finally {
            inFlight--;
          }
        },
      });
    },
    async stop() {
      abort.abort();
      await consumer?.disconnect().catch(() => undefined);
      await sink.stop();
    },
    inFlight: () => inFlight,
  };
}
