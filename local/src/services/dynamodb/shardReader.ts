/**
 * Reading a DynamoDB stream shard by shard, as Lambda's stream pollers do: DescribeStream finds the
 * shards (and their parents), one iterator per shard, GetRecords turns the records into the Lambda
 * event's shape (streamRecord.ts). Shared by the local runtime's event source
 * and the test poller, so both read a stream the same way.
 */
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  TrimmedDataAccessException,
} from "@aws-sdk/client-dynamodb-streams";
import type { DynamoDBRecord } from "aws-lambda";
import { toStreamRecord } from "./streamRecord.ts";

/** GetRecords failures in a row after which the shard iterator is fetched anew. */
const REACQUIRE_AFTER_FAILURES = 3;

/** Where a shard's reading stands. */
export interface ShardCursor {
  readonly id: string;
  readonly parentId?: string;
  iterator?: string;
  /** No more records will come: its iterator ran out, or it was trimmed past the checkpoint. */
  closed: boolean;
  /** The last record read: a new iterator starts after it. */
  lastSequence?: string;
  /** GetRecords failures in a row. */
  failures: number;
}

export interface StreamReader {
  /**
   * The shards not in `known` yet, each with an iterator: `LATEST` only when asked (the shards open
   * when a mapping starts), else from the trim horizon.
   */
  newShards(known: ReadonlyMap<string, unknown>, position: "LATEST" | "TRIM_HORIZON"): Promise<ShardCursor[]>;
  /** One GetRecords on the shard, in the Lambda event's shape; `[]` when it has nothing now. */
  read(shard: ShardCursor, limit: number): Promise<DynamoDBRecord[]>;
}

export function streamReader(
  streams: DynamoDBStreamsClient,
  streamArn: string,
  region: string,
  warn: (message: string) => void = (m) => process.emitWarning(m),
): StreamReader {
  const iteratorAt = async (shardId: string, position: { type: string; after?: string }) =>
    (
      await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: shardId,
          ShardIteratorType: position.type as "TRIM_HORIZON",
          ...(position.after ? { SequenceNumber: position.after } : {}),
        }),
      )
    ).ShardIterator;

  /**
   * A new iterator at the checkpoint (after the last record read), or at the trim horizon when
   * nothing was read yet: records may come again, never go missing.
   */
  const reacquire = async (shard: ShardCursor) => {
    shard.iterator = await iteratorAt(
      shard.id,
      shard.lastSequence
        ? { type: "AFTER_SEQUENCE_NUMBER", after: shard.lastSequence }
        : { type: "TRIM_HORIZON" },
    );
    shard.failures = 0;
  };

  return {
    async newShards(known, position) {
      const found: ShardCursor[] = [];
      let start: string | undefined;
      do {
        const out = await streams.send(
          new DescribeStreamCommand({
            StreamArn: streamArn,
            ...(start ? { ExclusiveStartShardId: start } : {}),
          }),
        );
        for (const s of out.StreamDescription?.Shards ?? []) {
          if (!s.ShardId || known.has(s.ShardId)) continue;
          found.push({
            id: s.ShardId,
            ...(s.ParentShardId ? { parentId: s.ParentShardId } : {}),
            iterator: await iteratorAt(s.ShardId, { type: position }),
            closed: false,
            failures: 0,
          });
        }
        start = out.StreamDescription?.LastEvaluatedShardId;
      } while (start);
      return found;
    },

    async read(shard, limit) {
      if (!shard.iterator) {
        shard.closed = true;
        return [];
      }
      let out: GetRecordsCommandOutput;
      try {
        out = await streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: limit }));
      } catch (error) {
        if (error instanceof TrimmedDataAccessException) {
          // Lambda never gives a shard up for this: it reads on from the oldest record still kept.
          // DynamoDB Local also answers so, at first, for the first shard of a stream created in
          // the same instant as its table; a fresh TRIM_HORIZON iterator then reads it all. Only a
          // shard that keeps answering so is closed.
          shard.failures++;
          if (shard.failures >= REACQUIRE_AFTER_FAILURES) {
            warn(`shard ${shard.id} of ${streamArn} trimmed past the checkpoint`);
            shard.closed = true;
            return [];
          }
          if (shard.lastSequence)
            warn(`shard ${shard.id} of ${streamArn}: records after the checkpoint were trimmed; reading on`);
          shard.iterator = await iteratorAt(shard.id, { type: "TRIM_HORIZON" });
          return [];
        }
        if (error instanceof ExpiredIteratorException) {
          await reacquire(shard);
          return [];
        }
        // An iterator can outlive the stream's process (a restarted database answers it with a
        // validation error, not ExpiredIterator): after a few failures in a row, start again from
        // the checkpoint instead of failing on the same iterator forever.
        shard.failures++;
        if (shard.failures >= REACQUIRE_AFTER_FAILURES) await reacquire(shard);
        throw error;
      }
      shard.failures = 0;
      shard.iterator = out.NextShardIterator;
      if (!out.NextShardIterator) shard.closed = true;
      const records = (out.Records ?? []).map((raw) => toStreamRecord(raw, streamArn, region));
      shard.lastSequence = records.at(-1)?.dynamodb?.SequenceNumber ?? shard.lastSequence;
      return records;
    },
  };
}
