/**
 * Lambda's rules for a stream event source mapping (DynamoDB Streams, Kafka), written once for
 * both local event sources, as the Lambda docs describe them (services-dynamodb-errors,
 * kafka-retry-configurations):
 * - records older than MaximumRecordAgeInSeconds are discarded before an invocation;
 * - a function error retries the batch; with BisectBatchOnFunctionError the batch is first split
 *   in two (splitting uses no retry);
 * - with ReportBatchItemFailures, the checkpoint moves to the lowest reported record and the batch
 *   is retried from there; an identifier that names no record of the batch fails the whole batch;
 * - after MaximumRetryAttempts retries (-1: until the record expires; with a Kafka destination at
 *   most 10) the rest of the batch goes to the on-failure destination, and the shard or partition
 *   moves on;
 * - retries back off exponentially (0.2 s doubling, at most 5 s).
 * What differs per source (the event's shape, the identifiers, the checkpoint, the destination's
 * record) is the source's `StreamSource`.
 */

import type { StreamMappingOptions } from "../../runtime/model.ts";
import type { DiscardCondition } from "../lambda/failureDestination.ts";
import type { InvokeResult } from "../lambda/functionHost.ts";
import type { EventSourceStats } from "../sqs/eventSource.ts";

/** What one stream source does its own way. */
export interface StreamSource<M> {
  readonly mapping: StreamMappingOptions & { readonly reportBatchItemFailures: boolean };
  readonly stats: EventSourceStats;
  /** A record's age in seconds at `nowMs`. */
  ageSeconds(record: M, nowMs: number): number;
  /**
   * The clock a record's age is read by (MaximumRecordAgeInSeconds): injectable, so a test brings a
   * record past its age by moving the clock, not by waiting for it. @default Date.now
   */
  readonly now?: () => number;
  /** One synchronous invocation with these records, in the source's event shape. */
  invoke(records: ReadonlyArray<M>): Promise<InvokeResult>;
  /** The index of the record a `batchItemFailures` entry names; -1 when it names none of them. */
  failedIndex(failure: unknown, records: ReadonlyArray<M>): number;
  /**
   * Sends records the mapping gives up on to the on-failure destination. `false`: the destination
   * refused them, and the batch stops where it is (retried later) rather than pass over them.
   */
  discard(
    records: ReadonlyArray<M>,
    condition: DiscardCondition,
    invokes: number,
    last?: InvokeResult,
  ): Promise<boolean | undefined>;
  /** `done` are finished (processed or discarded), `rest` still to come: move the checkpoint. */
  settled?(done: ReadonlyArray<M>, rest: ReadonlyArray<M>): Promise<void>;
  /** The mapping stopped, or no longer owns the shard or partition: stop retrying. */
  stopped(): boolean;
  pause(ms: number): Promise<void>;
}

/** The clock of a stream source (`StreamSource.now`), as its event source is given it. */
export type StreamClock = Pick<StreamSource<unknown>, "now">;

interface Work<M> {
  records: M[];
  attempts: number;
}

/** One batch through age checks, retries, bisection and partial responses, until done or discarded. */
export async function runStreamBatch<M>(batch: ReadonlyArray<M>, source: StreamSource<M>): Promise<void> {
  const { mapping, stats } = source;
  const work: Work<M>[] = [{ records: [...batch], attempts: 0 }];
  let invokes = 0;
  while (work.length > 0 && !source.stopped()) {
    const item = work[0]!;
    if (!(await discardAged(item, source, invokes))) return;
    if (item.records.length === 0) {
      work.shift();
      continue;
    }
    stats.batches++;
    stats.records += item.records.length;
    invokes++;
    const result = await source.invoke(item.records);
    const failedFrom = result.ok ? firstFailed(result.value, item.records, source) : "function-error";
    if (failedFrom === undefined) {
      stats.succeeded += item.records.length;
      await source.settled?.(item.records, []);
      work.shift();
      continue;
    }
    if (failedFrom === "function-error") {
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
    } else {
      // The checkpoint moves to the lowest reported record; the batch is retried from there.
      stats.succeeded += failedFrom;
      if (failedFrom > 0)
        await source.settled?.(item.records.slice(0, failedFrom), item.records.slice(failedFrom));
      item.records = item.records.slice(failedFrom);
    }
    item.attempts++;
    if (mapping.maximumRetryAttempts >= 0 && item.attempts > mapping.maximumRetryAttempts) {
      stats.failed += item.records.length;
      if ((await source.discard(item.records, "RetryAttemptsExhausted", invokes, result)) === false) return;
      await source.settled?.(item.records, []);
      work.shift();
      continue;
    }
    await source.pause(Math.min(5_000, 100 * 2 ** Math.min(item.attempts, 6)));
  }
}

/**
 * Records past MaximumRecordAgeInSeconds leave the batch for the on-failure destination; false
 * when the destination refused them (the batch then holds its place: nothing is passed over).
 */
async function discardAged<M>(item: Work<M>, source: StreamSource<M>, invokes: number): Promise<boolean> {
  const maxAge = source.mapping.maximumRecordAgeSeconds;
  if (maxAge < 0) return true;
  const now = source.now?.() ?? Date.now();
  const old = item.records.filter((r) => source.ageSeconds(r, now) > maxAge);
  if (old.length === 0) return true;
  if ((await source.discard(old, "RecordAgeExceeded", invokes)) === false) return false;
  item.records = item.records.filter((r) => !old.includes(r));
  return true;
}

/**
 * The index the batch is retried from, `undefined` when every record succeeded, or
 * `"function-error"` when the response names a record that is not in the batch (or names none).
 */
function firstFailed<M>(
  value: unknown,
  records: ReadonlyArray<M>,
  source: StreamSource<M>,
): number | "function-error" | undefined {
  const failures = source.mapping.reportBatchItemFailures
    ? ((value as { batchItemFailures?: unknown[] } | null)?.batchItemFailures ?? [])
    : [];
  if (failures.length === 0) return undefined;
  const indexes = failures.map((f) => source.failedIndex(f, records));
  return indexes.some((i) => i < 0) ? "function-error" : Math.min(...indexes);
}
