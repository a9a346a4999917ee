/**
 * The partial batch response of a Kinesis or DynamoDB Streams event source mapping (with
 * `FunctionResponseTypes: ["ReportBatchItemFailures"]`):
 *
 * ```json
 * { "batchItemFailures": [ { "itemIdentifier": "<SequenceNumber>" } ] }
 * ```
 *
 * "If the batchItemFailures array contains multiple items, Lambda uses the record with the lowest
 * sequence number as the checkpoint. Lambda then retries all records starting from that checkpoint"
 * (Lambda developer guide, "Configuring partial batch response with Kinesis Data Streams and Lambda",
 * and the same page for DynamoDB). An empty list is a full success; an empty or null identifier
 * fails the whole batch. So we report, per shard, the first record in batch (sequence) order that
 * is not done, and nothing else: every record after it comes back, and none is ever reported done
 * while an earlier one of its shard is unfinished. Pure.
 */
import type { RecordOutcome } from "../batch/recordOutcome.ts";

/** One entry of a stream's partial batch response. */
export interface StreamBatchItemFailure {
  /** The sequence number Lambda resumes the shard at (`kinesis.sequenceNumber`, `dynamodb.SequenceNumber`). */
  readonly itemIdentifier: string;
}

/** The partial batch response of a Kinesis or DynamoDB Streams trigger. */
export interface StreamBatchResponse {
  /** At most one entry per shard: its first unfinished record. Empty when the whole batch is done. */
  readonly batchItemFailures: StreamBatchItemFailure[];
}

/** Where a stream record sits: its stream, its shard (when the event says it) and its sequence number. */
export interface StreamCoordinates {
  readonly streamArn: string;
  /** Kinesis: from `eventID` (`shardId-…:<sequence>`). DynamoDB Streams records do not name theirs. */
  readonly shardId: string | undefined;
  readonly sequenceNumber: string;
}

/**
 * The answer: per shard, the first record in batch order without a `done` outcome (a record with
 * no outcome at all, a bug or a crash, is never acked). Lambda delivers a shard's records in
 * sequence order, so batch order is sequence order within a shard.
 */
export function streamBatchResponse<R>(
  plans: ReadonlyArray<{ readonly record: R; readonly outcome?: RecordOutcome | undefined }>,
  coordinatesOf: (record: R) => StreamCoordinates,
): StreamBatchResponse {
  const reported = new Map<string, string>();
  for (const p of plans) {
    if (p.outcome?.kind === "done") continue;
    const c = coordinatesOf(p.record);
    const shard = `${c.streamArn}\u0000${c.shardId ?? ""}`;
    if (!reported.has(shard)) reported.set(shard, c.sequenceNumber);
  }
  return { batchItemFailures: [...reported.values()].map((itemIdentifier) => ({ itemIdentifier })) };
}
