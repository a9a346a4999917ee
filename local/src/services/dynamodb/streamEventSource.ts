import { setTimeout as sleep } from "node:timers/promises";
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  TrimmedDataAccessException,
} from "@aws-sdk/client-dynamodb-streams";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBRecord } from "aws-lambda";
import type { DynamoDbMapping } from "../../runtime/model.ts";
import { matchesAnyFilter } from "../lambda/eventFilter.ts";
import {
  type DiscardCondition,
  invocationRecord,
  sendToSqsDestination,
} from "../lambda/failureDestination.ts";
import type { FunctionHost, InvokeResult } from "../lambda/functionHost.ts";
import { type EventSource, newStats } from "../sqs/eventSource.ts";
import { runStreamBatch, type StreamClock } from "./streamMapping.ts";
import { toStreamRecord } from "./streamPoller.ts";

/** Lambda polls each stream shard four times a second. */
const POLL_INTERVAL_MS = 250;
const SHARD_REFRESH_MS = 5_000;
/** GetRecords failures in a row after which the shard iterator is fetched anew. */
const REACQUIRE_AFTER_FAILURES = 3;

interface Shard {
  readonly id: string;
  readonly parentId?: string;
  iterator?: string;
  started: boolean;
  closed: boolean;
  lastSequence?: string;
  /** GetRecords failures in a row (see `read`). */
  failures: number;
  buffer: DynamoDBRecord[];
  firstBufferedAt: number;
  busy: boolean;
  worker?: Promise<void>;
}

const seq = (r: DynamoDBRecord) => r.dynamodb?.SequenceNumber ?? "";

/**
 * The DynamoDB Streams event source mapping, as Lambda documents it, on DynamoDB Local's stream:
 * - every shard is read with GetRecords (four polls a second), a child shard only after its parent
 *   is finished; one batch per shard at a time, in order;
 * - records that match no filter are skipped (they count as processed);
 * - a batch is up to BatchSize records, gathered for at most MaximumBatchingWindowInSeconds;
 * - the mapping's rules (maximum record age, retries, bisection, partial responses naming the
 *   lowest failed SequenceNumber, the on-failure destination) are streamMapping.ts's; an SQS
 *   on-failure destination receives the metadata (DDBStreamBatchInfo), not the records.
 * Checkpoints live in memory: a restarted runtime starts again from StartingPosition.
 */
export function dynamodbStreamEventSource(
  mapping: DynamoDbMapping,
  host: FunctionHost,
  streams: DynamoDBStreamsClient,
  sqs: SQSClient,
  region: string,
  clock: StreamClock = {},
): EventSource {
  const stats = newStats();
  const abort = new AbortController();
  const shards = new Map<string, Shard>();
  const windowMs = mapping.maxBatchingWindowSeconds * 1000;
  let refresher: Promise<void> | undefined;
  let firstRefresh = true;
  const fn = host.functionNamed(mapping.functionName);

  const pause = (ms: number) => sleep(ms, undefined, { signal: abort.signal }).catch(() => undefined);

  const refreshShards = async () => {
    let start: string | undefined;
    do {
      const out = await streams.send(
        new DescribeStreamCommand({
          StreamArn: mapping.streamArn,
          ...(start ? { ExclusiveStartShardId: start } : {}),
        }),
      );
      for (const s of out.StreamDescription?.Shards ?? []) {
        if (!s.ShardId || shards.has(s.ShardId)) continue;
        const shard: Shard = {
          id: s.ShardId,
          ...(s.ParentShardId ? { parentId: s.ParentShardId } : {}),
          started: false,
          closed: false,
          failures: 0,
          buffer: [],
          firstBufferedAt: 0,
          busy: false,
        };
        // LATEST applies to the shards open when the mapping starts; later shards are read from their start.
        const type = firstRefresh && mapping.startingPosition === "LATEST" ? "LATEST" : "TRIM_HORIZON";
        shard.iterator = (
          await streams.send(
            new GetShardIteratorCommand({
              StreamArn: mapping.streamArn,
              ShardId: s.ShardId,
              ShardIteratorType: type,
            }),
          )
        ).ShardIterator;
        shards.set(s.ShardId, shard);
      }
      start = out.StreamDescription?.LastEvaluatedShardId;
    } while (start);
    firstRefresh = false;
    for (const shard of shards.values()) {
      if (!shard.worker && eligible(shard)) shard.worker = runShard(shard);
    }
  };

  const finished = (s: Shard) => s.closed && s.buffer.length === 0 && !s.busy;
  const eligible = (s: Shard) => {
    const parent = s.parentId ? shards.get(s.parentId) : undefined;
    return parent === undefined || finished(parent);
  };

  /**
   * A new iterator at the checkpoint (after the last record read), or at the trim horizon when
   * nothing was read yet: records may come again, never go missing.
   */
  const reacquire = async (shard: Shard) => {
    shard.iterator = (
      await streams.send(
        new GetShardIteratorCommand({
          StreamArn: mapping.streamArn,
          ShardId: shard.id,
          ...(shard.lastSequence
            ? { ShardIteratorType: "AFTER_SEQUENCE_NUMBER", SequenceNumber: shard.lastSequence }
            : { ShardIteratorType: "TRIM_HORIZON" }),
        }),
      )
    ).ShardIterator;
    shard.failures = 0;
  };

  const read = async (shard: Shard): Promise<number> => {
    if (!shard.iterator) {
      shard.closed = true;
      return 0;
    }
    let out: GetRecordsCommandOutput;
    try {
      out = await streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: 1000 }));
    } catch (error) {
      if (error instanceof TrimmedDataAccessException) {
        process.emitWarning(`${mapping.logicalId}: shard ${shard.id} trimmed past the checkpoint`);
        shard.closed = true;
        return 0;
      }
      if (error instanceof ExpiredIteratorException) {
        await reacquire(shard);
        return 0;
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
    const records = out.Records ?? [];
    for (const raw of records) {
      const r = toStreamRecord(raw, mapping.streamArn, region);
      shard.lastSequence = r.dynamodb?.SequenceNumber ?? shard.lastSequence;
      if (!matchesAnyFilter(mapping.filters, r)) {
        stats.filtered++;
        continue;
      }
      if (shard.buffer.length === 0) shard.firstBufferedAt = Date.now();
      shard.buffer.push(r);
    }
    return records.length;
  };

  const discard = async (
    shard: Shard,
    records: DynamoDBRecord[],
    condition: DiscardCondition,
    count: number,
    last?: InvokeResult,
  ) => {
    if (records.length === 0) return;
    stats.discarded += records.length;
    const created = (r: DynamoDBRecord) =>
      new Date((r.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000).toISOString();
    const record = invocationRecord({
      functionArn: fn.arn,
      condition,
      approximateInvokeCount: count,
      ...(last ? { lastResult: last } : {}),
      batchInfoKey: "DDBStreamBatchInfo",
      batchInfo: {
        shardId: shard.id,
        startSequenceNumber: seq(records[0]!),
        endSequenceNumber: seq(records.at(-1)!),
        approximateArrivalOfFirstRecord: created(records[0]!),
        approximateArrivalOfLastRecord: created(records.at(-1)!),
        batchSize: records.length,
        streamArn: mapping.streamArn,
      },
    });
    try {
      await sendToSqsDestination(sqs, mapping.onFailure, record);
    } catch (error) {
      process.emitWarning(`${mapping.logicalId}: on-failure destination: ${(error as Error).message}`);
    }
  };

  /** One batch through Lambda's stream rules (streamMapping.ts), until done or discarded. */
  const processBatch = (shard: Shard, batch: DynamoDBRecord[]) =>
    runStreamBatch(batch, {
      mapping,
      stats,
      ageSeconds: (r, nowMs) => nowMs / 1000 - (r.dynamodb?.ApproximateCreationDateTime ?? nowMs / 1000),
      ...clock,
      invoke: (records) => host.invoke(mapping.functionName, { Records: records }),
      // An empty, null or unknown identifier fails the whole batch.
      failedIndex: (f, records) => {
        const id = (f as { itemIdentifier?: unknown } | null)?.itemIdentifier;
        return typeof id === "string" && id !== "" ? records.findIndex((r) => seq(r) === id) : -1;
      },
      discard: async (records, condition, count, last) => {
        await discard(shard, [...records], condition, count, last);
        return true;
      },
      stopped: () => abort.signal.aborted,
      pause,
    });

  const runShard = async (shard: Shard) => {
    while (!abort.signal.aborted) {
      try {
        while (shard.buffer.length < mapping.batchSize && !shard.closed) {
          const n = await read(shard);
          if (n === 0) break;
        }
      } catch (error) {
        if (abort.signal.aborted) return;
        process.emitWarning(`${mapping.logicalId}: GetRecords on ${shard.id}: ${(error as Error).message}`);
        await pause(1000);
        continue;
      }
      const ready =
        shard.buffer.length >= mapping.batchSize ||
        (shard.buffer.length > 0 && (shard.closed || Date.now() - shard.firstBufferedAt >= windowMs));
      if (ready) {
        const batch = shard.buffer.slice(0, mapping.batchSize);
        shard.busy = true;
        try {
          await processBatch(shard, batch);
        } finally {
          shard.buffer.splice(0, batch.length);
          if (shard.buffer.length > 0) shard.firstBufferedAt = Date.now();
          shard.busy = false;
        }
        continue;
      }
      if (finished(shard)) {
        // Children may start now.
        for (const s of shards.values()) if (!s.worker && eligible(s)) s.worker = runShard(s);
        return;
      }
      await pause(shard.buffer.length > 0 ? Math.min(POLL_INTERVAL_MS, windowMs) : POLL_INTERVAL_MS);
    }
  };

  return {
    mapping,
    stats,
    async start() {
      host.requestConcurrency(mapping.functionName, 1);
      await refreshShards();
      refresher = (async () => {
        while (!abort.signal.aborted) {
          await pause(SHARD_REFRESH_MS);
          if (abort.signal.aborted) break;
          await refreshShards().catch((e: Error) =>
            process.emitWarning(`${mapping.logicalId}: DescribeStream: ${e.message}`),
          );
        }
      })();
    },
    async stop() {
      abort.abort();
      await Promise.allSettled([refresher, ...[...shards.values()].map((s) => s.worker)]);
    },
    inFlight: () => [...shards.values()].filter((s) => s.busy || s.buffer.length > 0).length,
  };
}
