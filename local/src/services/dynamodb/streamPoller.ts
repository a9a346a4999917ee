import type { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { matchesAnyFilter } from "../lambda/eventFilter.ts";
import { type ShardCursor, streamReader } from "./shardReader.ts";

/** Options of `createStreamPoller`: the stream, the handler, and the mapping's settings. */
export interface StreamPollerOptions {
  /** The Streams client to read with (GetRecords, from each shard's TRIM_HORIZON). */
  readonly client: DynamoDBStreamsClient;
  /** The table's stream (`LatestStreamArn`). */
  readonly streamArn: string;
  /** The function's handler: returns a DynamoDBBatchResponse, or nothing for "all succeeded". */
  readonly handler: (event: DynamoDBStreamEvent) => Promise<unknown>;
  /** The most records per invocation, per shard. @default 100 */
  readonly batchSize?: number;
  /** A Lambda FilterCriteria pattern (object form); records it does not match are skipped. @default none */
  readonly filterPattern?: unknown;
  /** Retries of a failing batch before the rest of it is discarded. @default 3 */
  readonly maximumRetryAttempts?: number;
  /** Called with the records Lambda would give up on (after the retries). @default none */
  readonly onDiscard?: (records: DynamoDBRecord[]) => void;
  /** The region the records' `awsRegion` names. @default AWS_REGION, else "us-east-1" */
  readonly region?: string;
}

/** Reads a DynamoDB stream into Lambda-shaped records (tools and tests). */
export interface StreamPoller {
  /**
   * Polls every shard until a full round finds no new records and nothing is left to retry, or
   * `maxRounds` rounds (default 10000) have passed; resolves with the counters.
   */
  drain(options?: { maxRounds?: number }): Promise<StreamPollerStats>;
  /** The counters so far (the same object `drain` resolves with). */
  readonly stats: StreamPollerStats;
}

/** What a stream poller has done so far. */
export interface StreamPollerStats {
  /** Handler invocations. */
  invocations: number;
  /** Records handed to the handler (a retried record counts each time). */
  recordsDelivered: number;
  /** Records the filter pattern skipped. */
  recordsFiltered: number;
  /** Batches retried after a failure. */
  retries: number;
  /** Records given up on after the retries (`onDiscard`). */
  discarded: number;
}

interface ShardState extends ShardCursor {
  buffer: DynamoDBRecord[];
  attempts: number;
}

/**
 * Lambda's DynamoDB Streams event source mapping, played for a handler under test against a real
 * stream (DynamoDB Local): the handler is fed the same records, shapes and batches Lambda would
 * give it, each time `drain()` is called.
 *
 * - Records are read per shard with GetRecords and turned into the Lambda event shape (binary as
 *   base64, ApproximateCreationDateTime as epoch seconds).
 * - A FilterCriteria pattern drops records before the handler sees them (dropped = processed).
 * - Partial batch response: the checkpoint moves to the lowest reported SequenceNumber, and the
 *   batch is retried from there, up to `maximumRetryAttempts`; then the rest of the batch is
 *   discarded (Lambda's on-failure destination gets metadata only; here `onDiscard`).
 * - A thrown handler error retries the whole batch (BisectBatchOnFunctionError is not simulated:
 *   the local runtime's mappings do that).
 */
export function createStreamPoller(options: StreamPollerOptions): StreamPoller {
  const { client, streamArn, handler } = options;
  const batchSize = options.batchSize ?? 100;
  const maxRetries = options.maximumRetryAttempts ?? 3;
  const region = options.region ?? process.env.AWS_REGION ?? "us-east-1";
  const shards = new Map<string, ShardState>();
  const stats: StreamPollerStats = {
    invocations: 0,
    recordsDelivered: 0,
    recordsFiltered: 0,
    retries: 0,
    discarded: 0,
  };

  const reader = streamReader(client, streamArn, region);
  const refreshShards = async () => {
    for (const cursor of await reader.newShards(shards, "TRIM_HORIZON"))
      shards.set(cursor.id, { ...cursor, buffer: [], attempts: 0 });
  };

  /** Reads until the buffer holds a batch or the shard has nothing more right now. Returns records read. */
  const fill = async (state: ShardState): Promise<number> => {
    let read = 0;
    while (state.buffer.length < batchSize && !state.closed) {
      const records = await reader.read(state, batchSize);
      read += records.length;
      for (const r of records) {
        if (options.filterPattern !== undefined && !matchesAnyFilter([options.filterPattern], r)) {
          stats.recordsFiltered++;
          continue;
        }
        state.buffer.push(r);
      }
      if (records.length === 0) break;
    }
    return read;
  };

  const invoke = async (state: ShardState): Promise<void> => {
    const batch = state.buffer.slice(0, batchSize);
    stats.invocations++;
    stats.recordsDelivered += batch.length;
    let failedAt: number;
    try {
      const response = (await handler({ Records: batch })) as Partial<DynamoDBBatchResponse> | undefined;
      const failures = response?.batchItemFailures ?? [];
      if (failures.length === 0) {
        state.buffer.splice(0, batch.length);
        state.attempts = 0;
        return;
      }
      const ids = failures.map((f) => f.itemIdentifier);
      const indexes = ids.map((id) => batch.findIndex((r) => r.dynamodb?.SequenceNumber === id));
      // An unknown or empty identifier fails the whole batch, as in Lambda.
      failedAt = indexes.some((i) => i < 0) ? 0 : Math.min(...indexes);
    } catch {
      failedAt = 0;
    }
    state.buffer.splice(0, failedAt); // checkpoint before the lowest failure
    state.attempts = failedAt > 0 ? 1 : state.attempts + 1;
    if (state.attempts > maxRetries) {
      const rest = batch.length - failedAt;
      const dropped = state.buffer.splice(0, rest);
      stats.discarded += dropped.length;
      options.onDiscard?.(dropped);
      state.attempts = 0;
    } else {
      stats.retries++;
    }
  };

  return {
    stats,
    async drain({ maxRounds = 10_000 } = {}) {
      for (let round = 0; round < maxRounds; round++) {
        await refreshShards();
        let progress = 0;
        for (const state of shards.values()) {
          progress += await fill(state);
          while (state.buffer.length > 0) {
            await invoke(state);
            progress++;
            if (state.buffer.length < batchSize) progress += await fill(state);
          }
        }
        if (progress === 0) return stats;
      }
      return stats;
    },
  };
}
