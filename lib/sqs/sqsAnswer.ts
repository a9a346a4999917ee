/**
 * Turning an SQS batch's outcomes into the trigger's answer. Pure: the adapter sends what it returns.
 */
import type { Unfinished } from "../batch/batchPlan.ts";
import type { RecordOutcome } from "../batch/recordOutcome.ts";
import { isHealthyUnfinished } from "../core/errors.ts";

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

/**
 * The partial batch response, plus the visibility changes that space the retries out. With
 * `groupOf` (FIFO queues), the records of a group that come after its first unfinished record (held
 * back behind it) get at least that record's delay. SQS would hold them back anyway, since no
 * message of a group is handed out while an earlier one is in flight, so this changes nothing
 * there; but an SQS implementation that puts a message set to visibility 0 straight back among the
 * visible ones (LocalStack 2026.3.0, docs/local.md) would otherwise hand them out ahead of the failed
 * record and break the group's order. A copy of the head's delay costs nothing on SQS: the group
 * could not move on before the head comes back in either case.
 */
export function sqsAnswer<R extends SqsRecordRef>(
  unfinished: ReadonlyArray<Unfinished<R>>,
  groupOf?: (record: R) => string | undefined,
): SqsAnswer {
  const visibility: SqsAnswer["visibility"] = new Map();
  const headDelay = new Map<string, number>();
  for (const { record, delaySeconds } of unfinished) {
    const group = groupOf?.(record);
    const lane = group === undefined ? undefined : `${record.eventSourceARN}|${group}`;
    const head = lane === undefined ? undefined : headDelay.get(lane);
    if (lane !== undefined && head === undefined) headDelay.set(lane, delaySeconds);
    const list = visibility.get(record.eventSourceARN) ?? [];
    const seconds = Math.max(delaySeconds, head ?? 0);
    list.push({ id: record.messageId, receiptHandle: record.receiptHandle, seconds });
    visibility.set(record.eventSourceARN, list);
  }
  return {
    batchItemFailures: unfinished.map((u) => ({ itemIdentifier: u.record.messageId })),
    visibility,
  };
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
