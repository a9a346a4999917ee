/**
 * Key lanes: a Kafka key's records inside its partition, the unit of order on the retry path. A
 * lane gate blocks a lane behind a record that left for a retry topic, so the lane's later records
 * follow it instead of overtaking it.
 */
import type { KafkaRecordView } from "./mskEvent.ts";

/** A Kafka key's lane inside its partition; records without a key have none. */
export const keyLaneOf = (v: KafkaRecordView) =>
  v.keyBytes === null ? undefined : `${v.partitionKey}|${v.keyBytes.toString("base64")}`;

/**
 * Blocks a lane (a Kafka key, here) behind a record that left for the retry path, so the lane's
 * later records follow it instead of overtaking it. Per invocation.
 */
export function createLaneGate<B>() {
  const blocked = new Map<string, B>();
  return {
    block(lane: string | undefined, by: B): void {
      if (lane !== undefined && !blocked.has(lane)) blocked.set(lane, by);
    },
    blockedBy(lane: string | undefined): B | undefined {
      return lane === undefined ? undefined : blocked.get(lane);
    },
  };
}

/** A lane gate (`createLaneGate`). */
export type LaneGate<B> = ReturnType<typeof createLaneGate<B>>;
