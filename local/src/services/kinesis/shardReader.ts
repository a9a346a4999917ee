/**
 * Reading a Kinesis stream shard by shard, as Lambda's shared-throughput pollers do: ListShards
 * finds the shards and their parents (one for a split, two for a merge), one iterator per shard,
 * GetRecords turns the records into the Lambda event's shape (kinesisRecord.ts). A shard is
 * finished when its iterator runs out (a closed parent, read to its end).
 */
import {
  ExpiredIteratorException,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  type KinesisClient,
  ListShardsCommand,
  type ShardIteratorType,
} from "@aws-sdk/client-kinesis";
import type { KinesisStreamRecord } from "aws-lambda";
import { type RecordOrigin, toKinesisEventRecord } from "./kinesisRecord.ts";

/** GetRecords failures in a row after which the shard iterator is fetched anew. */
const REACQUIRE_AFTER_FAILURES = 3;

/** Where a shard's reading stands. */
export interface KinesisShardCursor {
  readonly id: string;
  /** The shards this one was split or merged from: it is read once they are finished. */
  readonly parentIds: readonly string[];
  iterator?: string;
  /** No more records will come: its iterator ran out (a closed shard, read to its end). */
  closed: boolean;
  /** The last record read: a new iterator starts after it. */
  lastSequence?: string;
  /** GetRecords failures in a row. */
  failures: number;
  /** The last GetRecords' `MillisBehindLatest`: how far the reader is behind the tip of the shard. */
  millisBehindLatest?: number;
}

/** Where a mapping starts on the shards open when it starts (later shards: their start). */
export type StartPosition =
  | { readonly type: "TRIM_HORIZON" | "LATEST" }
  | { readonly type: "AT_TIMESTAMP"; readonly timestamp: Date };

/** Reads one stream's shards (kinesisStreamReader). */
export interface KinesisStreamReader {
  /** The shards not in `known` yet, each with an iterator at `position`. */
  newShards(known: ReadonlyMap<string, unknown>, position: StartPosition): Promise<KinesisShardCursor[]>;
  /** One GetRecords on the shard, in the Lambda event's shape; `[]` when it has nothing now. */
  read(shard: KinesisShardCursor, limit: number): Promise<KinesisStreamRecord[]>;
}

/** A reader of `origin.streamArn` with `kinesis` (the mapping's role's client). */
export function kinesisStreamReader(
  kinesis: KinesisClient,
  origin: Omit<RecordOrigin, "shardId">,
): KinesisStreamReader {
  const { streamArn } = origin;
  const iteratorAt = async (shardId: string, type: ShardIteratorType, extra: object = {}) =>
    (
      await kinesis.send(
        new GetShardIteratorCommand({
          StreamARN: streamArn,
          ShardId: shardId,
          ShardIteratorType: type,
          ...extra,
        }),
      )
    ).ShardIterator;

  /** A new iterator after the last record read, or at the trim horizon: records may come again, never go missing. */
  const reacquire = async (shard: KinesisShardCursor) => {
    shard.iterator = shard.lastSequence
      ? await iteratorAt(shard.id, "AFTER_SEQUENCE_NUMBER", { StartingSequenceNumber: shard.lastSequence })
      : await iteratorAt(shard.id, "TRIM_HORIZON");
    shard.failures = 0;
  };

  return {
    async newShards(known, position) {
      const found: KinesisShardCursor[] = [];
      let token: string | undefined;
      do {
        const out = await kinesis.send(
          new ListShardsCommand(token ? { NextToken: token } : { StreamARN: streamArn }),
        );
        for (const s of out.Shards ?? []) {
          if (!s.ShardId || known.has(s.ShardId)) continue;
          const at =
            position.type === "AT_TIMESTAMP"
              ? await iteratorAt(s.ShardId, "AT_TIMESTAMP", { Timestamp: position.timestamp })
              : await iteratorAt(s.ShardId, position.type);
          found.push({
            id: s.ShardId,
            parentIds: [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => Boolean(p)),
            iterator: at,
            closed: false,
            failures: 0,
          });
        }
        token = out.NextToken;
      } while (token);
      return found;
    },

    async read(shard, limit) {
      if (!shard.iterator) {
        shard.closed = true;
        return [];
      }
      let out: GetRecordsCommandOutput;
      try {
        out = await kinesis.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: limit }));
      } catch (error) {
        // Iterators expire after 5 minutes unused (GetShardIterator API reference).
        if (error instanceof ExpiredIteratorException) {
          await reacquire(shard);
          return [];
        }
        shard.failures++;
        if (shard.failures >= REACQUIRE_AFTER_FAILURES) await reacquire(shard);
        throw error;
      }
      shard.failures = 0;
      if (out.MillisBehindLatest !== undefined) shard.millisBehindLatest = out.MillisBehindLatest;
      shard.iterator = out.NextShardIterator;
      if (!out.NextShardIterator) shard.closed = true;
      const records = (out.Records ?? []).map((r) =>
        toKinesisEventRecord(r, { ...origin, shardId: shard.id }),
      );
      shard.lastSequence = records.at(-1)?.kinesis.sequenceNumber ?? shard.lastSequence;
      return records;
    },
  };
}
