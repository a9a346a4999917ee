/**
 * The Kinesis view: each stream with its shards (ListShards: parents, open or closed), its
 * enhanced fan-out consumers, and each mapping reading it: its position on every shard (the last
 * record read and the last one done, the iterator age as MillisBehindLatest) and how many records it
 * gave up on to its on-failure destination. Without an app (`npm run emulators`) the streams
 * kinesis-local holds are listed, with no mappings.
 */
import { ListShardsCommand, ListStreamsCommand, type Shard } from "@aws-sdk/client-kinesis";
import type { KinesisMappingDto, KinesisShardDto, KinesisStreamDto } from "../../console/consoleApi.ts";
import type { ConsoleClients, ConsoleSources } from "../../console/consoleSources.ts";
import type { KinesisEventSource } from "./eventSource.ts";

const shardOf = (s: Shard): KinesisShardDto => ({
  shardId: s.ShardId ?? "",
  parentIds: [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => Boolean(p)),
  open: !s.SequenceNumberRange?.EndingSequenceNumber,
  startingSequenceNumber: s.SequenceNumberRange?.StartingSequenceNumber ?? "",
});

function mappingOf(source: KinesisEventSource): KinesisMappingDto {
  const m = source.mapping;
  return {
    logicalId: m.logicalId,
    functionName: m.functionName,
    ...(m.consumerArn ? { consumer: m.consumerArn } : {}),
    parallelizationFactor: m.parallelizationFactor,
    positions: source.positions(),
    batches: source.stats.batches,
    functionErrors: source.stats.functionErrors,
    discarded: source.stats.discarded,
    ...(m.onFailure?.kind === "sqs" ? { destinationQueue: m.onFailure.queue.name } : {}),
  };
}

/** The Kinesis view's reads: `streams()` answers `api/kinesis`. */
export function consoleKinesis(sources: ConsoleSources, clients: ConsoleClients) {
  const kinesisSources = () =>
    (sources.eventSources ?? []).filter(
      (s): s is KinesisEventSource => s.mapping.kind === "kinesis" && "positions" in s,
    );
  return {
    async streams(): Promise<KinesisStreamDto[]> {
      const client = clients.kinesis;
      if (!client) return [];
      const app = sources.app;
      const known = app
        ? app.streams.map((s) => ({
            name: s.name,
            arn: s.arn,
            mode: s.mode,
            retentionHours: s.retentionHours,
          }))
        : ((await client.send(new ListStreamsCommand({}))).StreamSummaries ?? []).map((s) => ({
            name: s.StreamName ?? "",
            arn: s.StreamARN ?? "",
          }));
      return Promise.all(
        known.map(async (s) => ({
          ...s,
          shards: ((await client.send(new ListShardsCommand({ StreamARN: s.arn }))).Shards ?? []).map(
            shardOf,
          ),
          consumers: (app?.streamConsumers ?? []).filter((c) => c.streamArn === s.arn).map((c) => c.name),
          mappings: kinesisSources()
            .filter((k) => k.mapping.streamArn === s.arn)
            .map(mappingOf),
        })),
      );
    },
  };
}
