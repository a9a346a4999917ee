/**
 * Turning a batch's outcomes into the trigger's answer. Pure: the adapters send what it returns.
 */
import { isHealthyUnfinished } from "./errors.ts";
import type { RecordOutcome } from "./recordOutcome.ts";

export interface Unfinished<R> {
  readonly record: R;
  readonly delaySeconds: number;
}

/** Every record not done, in batch order. A record with no outcome (a bug, a crash) is never acked. */
export function unfinishedOf<R>(
  plans: ReadonlyArray<{ readonly record: R; readonly outcome?: RecordOutcome | undefined }>,
): Unfinished<R>[] {
  return plans.flatMap((p) =>
    p.outcome?.kind === "done" ? [] : [{ record: p.record, delaySeconds: p.outcome?.delaySeconds ?? 0 }],
  );
}

export interface SqsRecordRef {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly eventSourceARN: string;
}

export interface SqsAnswer {
  readonly batchItemFailures: Array<{ itemIdentifier: string }>;
  /** Per source queue ARN: the visibility each unfinished record gets (its retry delay). */
  readonly visibility: Map<string, Array<{ id: string; receiptHandle: string; seconds: number }>>;
}

/** The partial batch response, plus the visibility changes that space the retries out. */
export function sqsAnswer(unfinished: ReadonlyArray<Unfinished<SqsRecordRef>>): SqsAnswer {
  const visibility: SqsAnswer["visibility"] = new Map();
  for (const { record, delaySeconds } of unfinished) {
    const list = visibility.get(record.eventSourceARN) ?? [];
    list.push({ id: record.messageId, receiptHandle: record.receiptHandle, seconds: delaySeconds });
    visibility.set(record.eventSourceARN, list);
  }
  return {
    batchItemFailures: unfinished.map((u) => ({ itemIdentifier: u.record.messageId })),
    visibility,
  };
}

/**
 * How many receives a failed record may use before the consumer parks it (with its context).
 * Standard queues: all of them (`maxReceiveCount`). FIFO queues: half, rounded down (at least 1).
 * The records of a FIFO group held back behind a failing one are received with it every time and
 * use a receive each time; a fresh copy of them cannot be sent (it would go behind the group's
 * later messages), so the other half is their headroom to run once the failing record is parked.
 * `QueueWithDlq` defaults FIFO queues to 10 receives (5 attempts, 5 of headroom) and refuses
 * fewer than `MIN_FIFO_RECEIVE_COUNT`.
 */
export function failureBudget(maxReceiveCount: number, fifo: boolean): number {
  return fifo ? Math.max(1, Math.floor(maxReceiveCount / 2)) : maxReceiveCount;
}

/**
 * What to do with a healthy record (held elsewhere, held back, out of time) on its queue's last
 * allowed receive, where SQS's redrive would dead-letter it, without any context, before it ever ran:
 * - `requeue` (standard queues): send it again as a fresh copy and ack the original;
 * - `park` (FIFO queues, where a copy would go behind the group's later messages): park it in the
 *   DLQ with its context (its error says it was healthy; `npm run dlq` redrives it with its id).
 * `undefined`: hand it back as usual.
 */
export function atLastReceive(input: {
  readonly outcome: RecordOutcome | undefined;
  readonly receiveCount: number;
  readonly maxReceiveCount: number | undefined;
  readonly fifo: boolean;
}): "requeue" | "park" | undefined {
  const { outcome, receiveCount, maxReceiveCount, fifo } = input;
  if (outcome?.kind !== "unfinished" || !isHealthyUnfinished(outcome.error)) return undefined;
  if (maxReceiveCount === undefined || receiveCount < maxReceiveCount) return undefined;
  return fifo ? "park" : "requeue";
}
