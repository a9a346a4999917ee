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
import type { DynamoDBBatchResponse, DynamoDBRecord } from "aws-lambda";
import { toLambdaRecord } from "../../outbox/streamPoller.ts";
import { matchesAnyFilter } from "./eventFilter.ts";
import { type DiscardCondition, invocationRecord, sendToSqsDestination } from "./failureDestination.ts";
import type { FunctionHost, InvokeResult } from "./functionHost.ts";
import type { DynamoDbMapping } from "./model.ts";
import { type EventSource, newStats } from "./sqsEventSource.ts";

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

interface Work {
  records: DynamoDBRecord[];
  attempts: number;
}

const seq = (r: DynamoDBRecord) => r.dynamodb?.SequenceNumber ?? "";

/**
 * The DynamoDB Streams event source mapping, as Lambda documents it, on DynamoDB Local's stream:
 * - every shard is read with GetRecords (four polls a second), a child shard only after its parent
 *   is finished; one batch per shard at a time, in order;
 * - records that match no filter are skipped (they count as processed);
 * - a batch is up to BatchSize records, gathered for at most MaximumBatchingWindowInSeconds;
 * - records older than MaximumRecordAgeInSeconds are discarded before an invocation;
 * - a function error retries the batch; with BisectBatchOnFunctionError the batch is first split
 *   in two (splitting does not consume retries);
 * - with ReportBatchItemFailures, the checkpoint moves to the lowest reported SequenceNumber and
 *   the batch is retried from there; an empty, null or unknown identifier fails the whole batch;
 * - after MaximumRetryAttempts retries (-1: until the record expires), the rest of the batch is
 *   discarded, and an SQS on-failure destination receives the metadata (DDBStreamBatchInfo), not
 *   the records. The shard then moves on.
 * Checkpoints live in memory: a restarted runtime starts again from StartingPosition.
 */
export function dynamodbStreamEventSource(
  mapping: DynamoDbMapping,
  host: FunctionHost,
  streams: DynamoDBStreamsClient,
  sqs: SQSClient,
  region: string,
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
      const r = toLambdaRecord(raw, mapping.streamArn, region);
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

  /** One batch through retries, bisection and partial responses, until done or discarded. */
  const processBatch = async (shard: Shard, batch: DynamoDBRecord[]) => {
    const work: Work[] = [{ records: batch, attempts: 0 }];
    let invokes = 0;
    while (work.length > 0 && !abort.signal.aborted) {
      const item = work[0]!;
      if (mapping.maximumRecordAgeSeconds >= 0) {
        const now = Date.now() / 1000;
        const fresh = item.records.filter(
          (r) => now - (r.dynamodb?.ApproximateCreationDateTime ?? now) <= mapping.maximumRecordAgeSeconds,
        );
        if (fresh.length < item.records.length) {
          await discard(
            shard,
            item.records.filter((r) => !fresh.includes(r)),
            "RecordAgeExceeded",
            invokes,
          );
          item.records = fresh;
        }
      }
      if (item.records.length === 0) {
        work.shift();
        continue;
      }
      stats.batches++;
      stats.records += item.records.length;
      invokes++;
      const result = await host.invoke(mapping.functionName, { Records: item.records });
      let failedFrom = 0;
      let functionError = !result.ok;
      if (result.ok) {
        const failures = mapping.reportBatchItemFailures
          ? ((result.value as Partial<DynamoDBBatchResponse> | null)?.batchItemFailures ?? [])
          : [];
        if (failures.length === 0) {
          stats.succeeded += item.records.length;
          work.shift();
          continue;
        }
        const indexes = failures.map((f) =>
          typeof f?.itemIdentifier === "string" && f.itemIdentifier !== ""
            ? item.records.findIndex((r) => seq(r) === f.itemIdentifier)
            : -1,
        );
        if (indexes.some((i) => i < 0))
          functionError = true; // invalid response: complete failure
        else {
          failedFrom = Math.min(...indexes);
          stats.succeeded += failedFrom;
          item.records = item.records.slice(failedFrom); // checkpoint at the lowest failed sequence number
        }
      }
      if (functionError) {
        stats.functionErrors++;
        if (mapping.bisectBatchOnFunctionError && item.records.length > 1) {
          const half = Math.ceil(item.records.length / 2);
          work.splice(
            0,
            1,
            { records: item.records.slice(0, half), attempts: item.attempts },
            { records: item.records.slice(half), attempts: item.attempts },
          );
          continue;
        }
      }
      item.attempts++;
      if (mapping.maximumRetryAttempts >= 0 && item.attempts > mapping.maximumRetryAttempts) {
        stats.failed += item.records.length;
        await discard(shard, item.records, "RetryAttemptsExhausted", invokes, result);
        work.shift();
        continue;
      }
      await pause(Math.min(5_000, 100 * 2 ** Math.min(item.attempts, 6)));
    }
  };

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
