/**
 * What became of one record of a batch, the same for every trigger. A discriminated union, never
 * thrown: the keyed scheduler is told that an unfinished record stops its lane (`stopsLane`).
 */
import { HeldBackError, OutOfTimeError } from "../core/errors.ts";
import type { TaskOutcome } from "./keyedScheduler.ts";

export type RecordOutcome =
  /** Acked: the effect ran, or had run before (a duplicate), or the record went where it belongs. */
  | { readonly kind: "done"; readonly why: DoneWhy }
  /**
   * Handed back to the trigger for a redelivery. `error` says why (typed: `HeldBackError`,
   * `OutOfTimeError`, `InProgressElsewhereError`, or the handler's own error); `delaySeconds` is the
   * earliest useful redelivery, where the trigger can honour one (SQS visibility).
   */
  | { readonly kind: "unfinished"; readonly error: unknown; readonly delaySeconds: number };

export type DoneWhy =
  | "processed"
  | "duplicate"
  /** In a dead-letter queue or topic, with its failure context. */
  | "parked"
  /**
   * Sent on with its context where a redelivery must recognise it (`BatchAdapter.routeOf`): a Kafka
   * retry or dead-letter topic, or a stream consumer's parking queue.
   */
  | "routed"
  /** Sent again as a fresh copy (SQS), so waiting does not use up the receives of a healthy record. */
  | "requeued";

export const done = (why: DoneWhy): RecordOutcome => ({ kind: "done", why });

export const unfinished = (error: unknown, delaySeconds = 0): RecordOutcome => ({
  kind: "unfinished",
  error,
  delaySeconds,
});

/** An unfinished record stops its lane: a FIFO group's or a partition's later records must wait. */
export const stopsLane = (outcome: RecordOutcome): boolean => outcome.kind === "unfinished";

/**
 * The outcome of a scheduler slot. A record that never started is unfinished with a typed reason;
 * a rejected task is a bug in our own code path and is never acked.
 */
export function outcomeOfTask(task: TaskOutcome<RecordOutcome>): RecordOutcome {
  if (task.status === "fulfilled") return task.value;
  if (task.status === "rejected") return unfinished(task.reason);
  return task.reason === "out-of-time"
    ? unfinished(new OutOfTimeError("not started: too little Lambda time was left"))
    : unfinished(new HeldBackError("not started: an earlier record of its lane is unfinished"));
}
