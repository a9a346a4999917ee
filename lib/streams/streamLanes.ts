/**
 * Lanes of a stream batch: one per shard (`ordering: "shard"`, the stream's own order), or one per
 * ordering key inside its shard (`ordering: "key"`: the Kinesis partition key, the DynamoDB item's
 * key), run side by side within the consumer's `concurrency`. An unfinished record stops its lane
 * (`stopsLane`), so with "shard" nothing after a failure runs, and with "key" only its key waits.
 * Pure.
 */
import type { StreamCoordinates } from "./streamAnswer.ts";

/** How a stream batch is ordered: per shard (one record at a time) or per key within a shard. */
export type StreamOrdering = "shard" | "key";

/** The lane of a record: its shard, or its shard and ordering key. */
export function streamLaneOf(
  ordering: StreamOrdering,
  coordinates: StreamCoordinates,
  orderingKey: string | undefined,
): string {
  const shard = `${coordinates.streamArn}|${coordinates.shardId ?? ""}`;
  return ordering === "key" ? `${shard}|${orderingKey ?? ""}` : shard;
}
