import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { KinesisClient } from "@aws-sdk/client-kinesis";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { KinesisStreamRecord } from "aws-lambda";
import type { KinesisMapping } from "../../runtime/model.ts";
import { runStreamBatch, type StreamClock } from "../dynamodb/streamMapping.ts";
import { matchesAnyFilter } from "../lambda/eventFilter.ts";
import {
  type DiscardCondition,
  invocationRecord,
  sendToSqsDestination,
} from "../lambda/failureDestination.ts";
import type { FunctionHost, InvokeResult } from "../lambda/functionHost.ts";
import { type EventSource, type EventSourceStats, newStats } from "../sqs/eventSource.ts";
import { compareSequence, filterView } from "./kinesisRecord.ts";
import { type KinesisShardCursor, kinesisStreamReader, type StartPosition } from "./shardReader.ts";

/** Lambda polls each shard once a second with shared throughput (Kinesis "Polling and batching streams"). */
const POLL_INTERVAL_MS = 250;
const SHARD_REFRESH_MS = 5_000;
/** GetRecords returns at most 10,000 records (GetRecords API reference). */
const GET_RECORDS_LIMIT = 10_000;

/**
 * One of a shard's `ParallelizationFactor` concurrent batchers: Lambda splits a shard into virtual
 * shards by partition key, so the records of one key always meet the same lane, in order.
 */
interface Lane {
  buffer: KinesisStreamRecord[];
  firstBufferedAt: number;
  work?: Promise<void>;
}

interface Shard extends KinesisShardCursor {
  lanes: Lane[];
  worker?: Promise<void>;
  /** The highest sequence number each lane has finished (processed or discarded), for the console. */
  done?: string;
}

/** A shard's reading position, as the console shows it. */
export interface KinesisShardPosition {
  readonly shardId: string;
  readonly parentIds: readonly string[];
  readonly closed: boolean;
  readonly lastRead?: string;
  readonly lastDone?: string;
  readonly buffered: number;
  /** `MillisBehindLatest` of the last read: the mapping's iterator age. */
  readonly iteratorAgeMs?: number;
}

/** The Kinesis event source, with the positions of its shards. */
export interface KinesisEventSource extends EventSource {
  readonly mapping: KinesisMapping;
  positions(): KinesisShardPosition[];
}

const seq = (r: KinesisStreamRecord) => r.kinesis.sequenceNumber;

/** The lane of a partition key: a stable hash, so one key always meets the same lane. */
function laneOf(partitionKey: string, lanes: number): number {
  return lanes === 1 ? 0 : createHash("md5").update(partitionKey).digest().readUInt32BE(0) % lanes;
}

/** What an SQS on-failure destination receives for records given up on (KinesisBatchInfo): metadata, not records. */
async function discardToDestination(
  mapping: KinesisMapping,
  functionArn: string,
  sqs: SQSClient,
  stats: EventSourceStats,
  discarded: {
    shardId: string;
    records: readonly KinesisStreamRecord[];
    condition: DiscardCondition;
    count: number;
    last?: InvokeResult;
  },
): Promise<boolean> {
  const { records } = discarded;
  if (records.length === 0) return true;
  const arrival = (r: KinesisStreamRecord) =>
    new Date(r.kinesis.approximateArrivalTimestamp * 1000).toISOString();
  // Lambda developer guide, "Retain discarded batch records for a Kinesis Data Streams event
  // source": the invocation record with `KinesisBatchInfo`.
  const record = invocationRecord({
    functionArn,
    condition: discarded.condition,
    approximateInvokeCount: discarded.count,
    ...(discarded.last ? { lastResult: discarded.last } : {}),
    batchInfoKey: "KinesisBatchInfo",
    batchInfo: {
      shardId: discarded.shardId,
      startSequenceNumber: seq(records[0]!),
      endSequenceNumber: seq(records.at(-1)!),
      approximateArrivalOfFirstRecord: arrival(records[0]!),
      approximateArrivalOfLastRecord: arrival(records.at(-1)!),
      batchSize: records.length,
      streamArn: mapping.streamArn,
    },
  });
  stats.discarded += records.length;
  try {
    await sendToSqsDestination(sqs, mapping.onFailure, record);
  } catch (error) {
    // As the DynamoDB Streams source: the shard moves on, and the refusal is reported.
    process.emitWarning(`${mapping.logicalId}: on-failure destination: ${(error as Error).message}`);
  }
  return true;
}

/** The position a mapping starts at on the shards open when it starts. */
function startOf(mapping: KinesisMapping): StartPosition {
  return mapping.startingPosition === "AT_TIMESTAMP"
    ? { type: "AT_TIMESTAMP", timestamp: new Date((mapping.startingPositionTimestamp ?? 0) * 1000) }
    : { type: mapping.startingPosition };
}

/** What the Kinesis event source is given: the mapping, who runs it, and the clients it polls with. */
export interface KinesisSourceDeps {
  readonly host: FunctionHost;
  readonly kinesis: KinesisClient;
  readonly sqs: SQSClient;
  readonly region: string;
  /** The function's execution role (the records' `invokeIdentityArn`). */
  readonly roleArn: string;
  readonly clock?: StreamClock;
}

/** What one batch of a Kinesis mapping runs with. */
interface BatchContext {
  readonly mapping: KinesisMapping;
  readonly deps: KinesisSourceDeps;
  readonly stats: EventSourceStats;
  readonly functionArn: string;
  readonly abort: AbortController;
  readonly pause: (ms: number) => Promise<void>;
}

/** One batch of a shard's lane through Lambda's stream rules (streamMapping.ts), until done or discarded. */
function runKinesisBatch(shard: Shard, batch: KinesisStreamRecord[], c: BatchContext): Promise<void> {
  const { mapping, deps, stats } = c;
  return runStreamBatch(batch, {
    mapping,
    stats,
    ageSeconds: (r, nowMs) => nowMs / 1000 - r.kinesis.approximateArrivalTimestamp,
    ...deps.clock,
    invoke: (records) => deps.host.invoke(mapping.functionName, { Records: records }),
    // An empty, null or unknown identifier fails the whole batch.
    failedIndex: (f, records) => {
      const id = (f as { itemIdentifier?: unknown } | null)?.itemIdentifier;
      return typeof id === "string" && id !== "" ? records.findIndex((r) => seq(r) === id) : -1;
    },
    discard: (records, condition, count, last) =>
      discardToDestination(mapping, c.functionArn, deps.sqs, stats, {
        shardId: shard.id,
        records,
        condition,
        count,
        ...(last ? { last } : {}),
      }),
    settled: async (done) => {
      const last = done.at(-1);
      if (last && (!shard.done || compareSequence(seq(last), shard.done) > 0)) shard.done = seq(last);
    },
    stopped: () => c.abort.signal.aborted,
    pause: c.pause,
  });
}

/**
 * The Kinesis event source mapping, as Lambda documents it ("How Lambda processes records from
 * Kinesis Data Streams"), on kinesis-local:
 * - every shard is read with GetRecords; a child shard (of a split or a merge) only once all its
 *   parents are read to their end and their batches are finished, so each key's order holds across
 *   a reshard;
 * - each shard has `ParallelizationFactor` lanes (virtual shards by partition key): one batch per
 *   lane at a time, so a key's records stay in order while lanes run side by side;
 * - a batch is up to BatchSize records, gathered for at most MaximumBatchingWindowInSeconds;
 * - records no filter matches are skipped (they count as processed);
 * - the rules (record age, retries, bisection, a partial response checkpointing at the lowest failed
 *   sequence number, the on-failure destination) are streamMapping.ts's; an SQS on-failure
 *   destination receives the metadata (KinesisBatchInfo), not the records.
 * Checkpoints live in memory: a restarted runtime starts again from StartingPosition.
 */
export function kinesisEventSource(mapping: KinesisMapping, deps: KinesisSourceDeps): KinesisEventSource {
  const { host } = deps;
  const stats = newStats();
  const abort = new AbortController();
  const shards = new Map<string, Shard>();
  const windowMs = mapping.maxBatchingWindowSeconds * 1000;
  const pf = Math.max(1, Math.min(10, mapping.parallelizationFactor));
  let refresher: Promise<void> | undefined;
  let firstRefresh = true;
  const fn = host.functionNamed(mapping.functionName);
  const pause = (ms: number) => sleep(ms, undefined, { signal: abort.signal }).catch(() => undefined);
  const reader = kinesisStreamReader(deps.kinesis, {
    streamArn: mapping.streamArn,
    region: deps.region,
    roleArn: deps.roleArn,
  });

  const buffered = (s: Shard) => s.lanes.reduce((n, l) => n + l.buffer.length, 0);
  const busy = (s: Shard) => s.lanes.some((l) => l.work !== undefined);
  const finished = (s: Shard) => s.closed && buffered(s) === 0 && !busy(s);
  // A parent no longer listed (trimmed away) counts as finished.
  const eligible = (s: Shard) =>
    s.parentIds.every((id) => {
      const parent = shards.get(id);
      return parent === undefined || finished(parent);
    });
  const startEligible = () => {
    for (const s of shards.values()) if (!s.worker && !finished(s) && eligible(s)) s.worker = runShard(s);
  };

  const refreshShards = async () => {
    // The starting position applies to the shards open when the mapping starts; later ones are read from their start.
    const position: StartPosition = firstRefresh ? startOf(mapping) : { type: "TRIM_HORIZON" };
    for (const cursor of await reader.newShards(shards, position))
      shards.set(cursor.id, {
        ...cursor,
        lanes: Array.from({ length: pf }, () => ({ buffer: [], firstBufferedAt: 0 })),
      });
    firstRefresh = false;
    startEligible();
  };

  /** One GetRecords into the shard's lanes, less what no filter lets through; the records read. */
  const read = async (shard: Shard): Promise<number> => {
    const records = await reader.read(shard, GET_RECORDS_LIMIT);
    for (const r of records) {
      if (!matchesAnyFilter(mapping.filters, filterView(r))) {
        stats.filtered++;
        continue;
      }
      const lane = shard.lanes[laneOf(r.kinesis.partitionKey, pf)]!;
      if (lane.buffer.length === 0) lane.firstBufferedAt = Date.now();
      lane.buffer.push(r);
    }
    return records.length;
  };

  const processBatch = (shard: Shard, batch: KinesisStreamRecord[]) =>
    runKinesisBatch(shard, batch, { mapping, deps, stats, functionArn: fn.arn, abort, pause });

  /** Starts the lane's next batch when it is ready (full, or its window is over, or the shard is closed). */
  const dispatch = (shard: Shard, lane: Lane) => {
    if (lane.work || lane.buffer.length === 0) return;
    const ready =
      lane.buffer.length >= mapping.batchSize ||
      shard.closed ||
      Date.now() - lane.firstBufferedAt >= windowMs;
    if (!ready) return;
    const batch = lane.buffer.slice(0, mapping.batchSize);
    lane.work = processBatch(shard, batch).finally(() => {
      lane.buffer.splice(0, batch.length);
      if (lane.buffer.length > 0) lane.firstBufferedAt = Date.now();
      lane.work = undefined;
    });
  };

  const runShard = async (shard: Shard) => {
    while (!abort.signal.aborted) {
      try {
        // Read ahead at most one batch per lane.
        while (buffered(shard) < mapping.batchSize * pf && !shard.closed) {
          if ((await read(shard)) === 0) break;
        }
      } catch (error) {
        if (abort.signal.aborted) return;
        process.emitWarning(`${mapping.logicalId}: GetRecords on ${shard.id}: ${(error as Error).message}`);
        await pause(1000);
        continue;
      }
      for (const lane of shard.lanes) dispatch(shard, lane);
      if (finished(shard)) {
        startEligible(); // its children may start now
        return;
      }
      const works = shard.lanes.flatMap((l) => (l.work ? [l.work] : []));
      const wait = buffered(shard) > 0 ? Math.min(POLL_INTERVAL_MS, Math.max(windowMs, 1)) : POLL_INTERVAL_MS;
      await Promise.race([pause(wait), ...works]);
    }
  };

  return {
    mapping,
    stats,
    async start() {
      // Lambda runs up to one batch per lane of every shard at once.
      host.requestConcurrency(mapping.functionName, pf);
      await refreshShards();
      refresher = (async () => {
        while (!abort.signal.aborted) {
          await pause(SHARD_REFRESH_MS);
          if (abort.signal.aborted) break;
          await refreshShards().catch((e: Error) =>
            process.emitWarning(`${mapping.logicalId}: ListShards: ${e.message}`),
          );
        }
      })();
    },
    async stop() {
      abort.abort();
      await Promise.allSettled([
        refresher,
        ...[...shards.values()].flatMap((s) => [s.worker, ...s.lanes.map((l) => l.work)]),
      ]);
    },
    inFlight: () =>
      [...shards.values()].reduce((n, s) => n + s.lanes.filter((l) => l.work || l.buffer.length).length, 0),
    positions: () =>
      [...shards.values()].map((s) => ({
        shardId: s.id,
        parentIds: s.parentIds,
        closed: s.closed,
        ...(s.lastSequence ? { lastRead: s.lastSequence } : {}),
        ...(s.done ? { lastDone: s.done } : {}),
        buffered: buffered(s),
        ...(s.millisBehindLatest !== undefined ? { iteratorAgeMs: s.millisBehindLatest } : {}),
      })),
  };
}
