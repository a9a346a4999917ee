/**
 * The one parking queue of a consumer: `DLQ_URL` names a single queue, so the triggers of one
 * function must agree on it. Stream triggers share theirs; an SQS trigger's dead-letter queue
 * cannot serve a stream trigger too (its redrive sends messages back to the SQS source queue,
 * where Lambda's stream failure metadata does not belong), so mixing them fails synth.
 */
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type { ConsumerFunctionBase } from "./consumerFunctionBase.ts";
import { ConsumerRuleError } from "./rules/ruleError.ts";

/** Which kind of trigger set a consumer's `DLQ_URL`. */
export type ParkingQueueOwner = "sqs" | "stream";

const claimed = new WeakMap<ConsumerFunctionBase, { queue: sqs.IQueue; by: ParkingQueueOwner }>();

/** The queue a stream trigger of `consumer` already parks into, if any. */
export function streamParkingQueueOf(consumer: ConsumerFunctionBase): sqs.IQueue | undefined {
  const c = claimed.get(consumer);
  return c?.by === "stream" ? c.queue : undefined;
}

/**
 * Records that `by` parks `consumer`'s failures in `queue` (its `DLQ_URL`); throws
 * `StreamParkingQueueConflict` when a stream trigger and another trigger name different queues.
 */
export function claimParkingQueue(
  consumer: ConsumerFunctionBase,
  queue: sqs.IQueue,
  by: ParkingQueueOwner,
): void {
  const c = claimed.get(consumer);
  if (c && c.queue !== queue && (c.by === "stream" || by === "stream")) {
    throw new ConsumerRuleError(
      "StreamParkingQueueConflict",
      `this consumer's triggers name two parking queues (${c.queue.node.path} by its ${c.by} trigger, ` +
        `${queue.node.path} by its ${by} trigger); the consumer parks into the one queue of DLQ_URL. Give every ` +
        "stream trigger of a function the same onFailureQueue (or none), and consume SQS queues and streams with " +
        "separate functions.",
      consumer.node.path,
    );
  }
  claimed.set(consumer, { queue, by });
}
