import { setTimeout as sleep } from "node:timers/promises";
import type { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
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
import { type EventSource, type EventSourceStats, newStats } from "../sqs/eventSource.ts";
import { type ShardCursor, streamReader } from "./shardReader.ts";
import { runStreamBatch, type StreamClock } from "./streamMapping.ts";

/** Lambda polls each stream shard four times a second. */
const POLL_INTERVAL_MS = 250;
const SHARD_REFRESH_MS = 5_000;

interface Shard extends ShardCursor {
  buffer: DynamoDBRecord[];
  firstBufferedAt: number;
  busy: boolean;
  worker?: Promise<void>;
}

const seq = (r: DynamoDBRecord) => r.dynamodb?.SequenceNumber ?? "";

/** The metadata (DDBStreamBatchInfo) an SQS on-failure destination receives for records given up on. */
async function discardToDestination(
  mapping: DynamoDbMapping,
  functionArn: string,
  sqs: SQSClient,
  stats: EventSourceStats,
  discarded: {
    shardId: string;
    records: DynamoDBRecord[];
    condition: DiscardCondition;
    count: number;
    last?: InvokeResult;
  },
): Promise<void> {
  const { records } = discarded;
  if (records.length === 0) return;
  stats.discarded += records.length;
  const created = (r: DynamoDBRecord) =>
    new Date((r.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000).toISOString();
  const record = invocationRecord({
    functionArn,
    condition: discarded.condition,
    approximateInvokeCount: discarded.count,
    ...(discarded.last ? { lastResult: discarded.last } : {}),
    batchInfoKey: "DDBStreamBatchInfo",
    batchInfo: {
      shardId: discarded.shardId,
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
}

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

  const reader = streamReader(streams, mapping.streamArn, region, (m) =>
    process.emitWarning(`${mapping.logicalId}: ${m}`),
  );

  const refreshShards = async () => {
    // LATEST applies to the shards open when the mapping starts; later shards are read from their start.
    const position = firstRefresh && mapping.startingPosition === "LATEST" ? "LATEST" : "TRIM_HORIZON";
    for (const cursor of await reader.newShards(shards, position))
      shards.set(cursor.id, { ...cursor, buffer: [], firstBufferedAt: 0, busy: false });
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

  /** One GetRecords into the shard's buffer, less what no filter lets through; the records read. */
  const read = async (shard: Shard): Promise<number> => {
    const records = await reader.read(shard, 1000);
    for (const r of records) {
      if (!matchesAnyFilter(mapping.filters, r)) {
        stats.filtered++;
        continue;
      }
      if (shard.buffer.length === 0) shard.firstBufferedAt = Date.now();
      shard.buffer.push(r);
    }
    return records.length;
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
        const discarded = {
          shardId: shard.id,
          records: [...records],
          condition,
          count,
          ...(last ? { last } : {}),
        };
        await discardToDestination(mapping, fn.arn, sqs, stats, discarded);
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
