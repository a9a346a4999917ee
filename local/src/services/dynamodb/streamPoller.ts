import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type AttributeValue as StreamsAttributeValue,
  type _Record as StreamsRecord,
} from "@aws-sdk/client-dynamodb-streams";
import type {
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
  AttributeValue as LambdaAttributeValue,
} from "aws-lambda";
import { matchesAnyFilter } from "../lambda/eventFilter.ts";

/**
 * Lambda's DynamoDB Streams event-source mapping, played locally against a real stream (DynamoDB
 * Local): the relay handler is fed the same records, shapes and batches Lambda would give it.
 *
 * - Records are read per shard with GetRecords and turned into the Lambda event shape (binary as
 *   base64, ApproximateCreationDateTime as epoch seconds).
 * - A FilterCriteria pattern drops records before the handler sees them (dropped = processed).
 * - Partial batch response: the checkpoint moves to the lowest reported SequenceNumber, and the
 *   batch is retried from there, up to `maximumRetryAttempts`; then the rest of the batch is
 *   discarded (Lambda's on-failure destination gets metadata only; here `onDiscard`).
 * - A thrown handler error retries the whole batch (BisectBatchOnFunctionError is not simulated).
 * Used by the tests, the benchmark and the local runtime.
 */
export interface StreamPollerOptions {
  readonly client: DynamoDBStreamsClient;
  readonly streamArn: string;
  /** Returns a DynamoDBBatchResponse (or nothing, for "all succeeded"). */
  readonly handler: (event: DynamoDBStreamEvent) => Promise<unknown>;
  /** @default 100 */
  readonly batchSize?: number;
  /** A Lambda FilterCriteria pattern (object form). */
  readonly filterPattern?: unknown;
  /** @default 3 */
  readonly maximumRetryAttempts?: number;
  /** Called with the records Lambda would give up on. */
  readonly onDiscard?: (records: DynamoDBRecord[]) => void;
  /** @default AWS_REGION */
  readonly region?: string;
}

/** Reads a DynamoDB stream into Lambda-shaped records (tools and tests). */
export interface StreamPoller {
  /** Polls every shard until a full round finds no new records and nothing is left to retry. */
  drain(options?: { maxRounds?: number }): Promise<StreamPollerStats>;
  readonly stats: StreamPollerStats;
}

export interface StreamPollerStats {
  invocations: number;
  recordsDelivered: number;
  recordsFiltered: number;
  retries: number;
  discarded: number;
}

interface ShardState {
  iterator: string | undefined;
  buffer: DynamoDBRecord[];
  attempts: number;
  closed: boolean;
}

function b64(u: Uint8Array): string {
  return Buffer.from(u).toString("base64");
}

/** SDK (Streams API) attribute value → the Lambda event's JSON shape. */
export function toLambdaAttributeValue(v: StreamsAttributeValue): LambdaAttributeValue {
  if (v.S !== undefined) return { S: v.S };
  if (v.N !== undefined) return { N: v.N };
  if (v.B !== undefined) return { B: b64(v.B) };
  if (v.BOOL !== undefined) return { BOOL: v.BOOL };
  if (v.NULL !== undefined) return { NULL: v.NULL };
  if (v.SS !== undefined) return { SS: v.SS };
  if (v.NS !== undefined) return { NS: v.NS };
  if (v.BS !== undefined) return { BS: v.BS.map(b64) };
  if (v.L !== undefined) return { L: v.L.map(toLambdaAttributeValue) };
  if (v.M !== undefined) return { M: toLambdaImage(v.M) };
  return { NULL: true };
}

export function toLambdaImage(
  image: Record<string, StreamsAttributeValue>,
): Record<string, LambdaAttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([k, v]) => [k, toLambdaAttributeValue(v)]));
}

/** One Streams API record → the record Lambda puts into a DynamoDBStreamEvent. */
export function toStreamRecord(record: StreamsRecord, streamArn: string, region: string): DynamoDBRecord {
  const d = record.dynamodb ?? {};
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord["eventName"],
    eventVersion: record.eventVersion ?? "1.1",
    eventSource: "aws:dynamodb",
    awsRegion: region,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(d.ApproximateCreationDateTime
        ? { ApproximateCreationDateTime: Math.floor(d.ApproximateCreationDateTime.getTime() / 1000) }
        : {}),
      ...(d.Keys ? { Keys: toLambdaImage(d.Keys) } : {}),
      ...(d.NewImage ? { NewImage: toLambdaImage(d.NewImage) } : {}),
      ...(d.OldImage ? { OldImage: toLambdaImage(d.OldImage) } : {}),
      ...(d.SequenceNumber ? { SequenceNumber: d.SequenceNumber } : {}),
      ...(d.SizeBytes !== undefined ? { SizeBytes: d.SizeBytes } : {}),
      ...(d.StreamViewType ? { StreamViewType: d.StreamViewType } : {}),
    },
  };
}

/** Creates a DynamoDB stream poller. */
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

  const refreshShards = async () => {
    let exclusiveStartShardId: string | undefined;
    do {
      const out = await client.send(
        new DescribeStreamCommand({
          StreamArn: streamArn,
          ...(exclusiveStartShardId ? { ExclusiveStartShardId: exclusiveStartShardId } : {}),
        }),
      );
      for (const shard of out.StreamDescription?.Shards ?? []) {
        if (!shard.ShardId || shards.has(shard.ShardId)) continue;
        const it = await client.send(
          new GetShardIteratorCommand({
            StreamArn: streamArn,
            ShardId: shard.ShardId,
            ShardIteratorType: "TRIM_HORIZON",
          }),
        );
        shards.set(shard.ShardId, { iterator: it.ShardIterator, buffer: [], attempts: 0, closed: false });
      }
      exclusiveStartShardId = out.StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId);
  };

  /** Reads until the buffer holds a batch or the shard has nothing more right now. Returns records read. */
  const fill = async (state: ShardState): Promise<number> => {
    let read = 0;
    while (state.buffer.length < batchSize && state.iterator && !state.closed) {
      const out = await client.send(
        new GetRecordsCommand({ ShardIterator: state.iterator, Limit: batchSize }),
      );
      state.iterator = out.NextShardIterator;
      if (!out.NextShardIterator) state.closed = true;
      const records = out.Records ?? [];
      read += records.length;
      for (const r of records) {
        const lambda = toStreamRecord(r, streamArn, region);
        if (options.filterPattern !== undefined && !matchesAnyFilter([options.filterPattern], lambda)) {
          stats.recordsFiltered++;
          continue;
        }
        state.buffer.push(lambda);
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
