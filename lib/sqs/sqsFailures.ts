/**
 * Where a failed SQS record goes: back to its queue after a jittered backoff (the answer sets it
 * as the record's visibility), or parked in the dead-letter queue with its context: at once for a
 * permanent error, and on its last allowed receive for a transient one. A record that cannot be
 * parked is retried instead: not parked means not acked.
 */
import type { SQSRecord } from "aws-lambda";
import { beforeDeadline } from "../batch/lambdaDeadline.ts";
import { done, type RecordOutcome, unfinished } from "../batch/recordOutcome.ts";
import {
  classifyError,
  describeError,
  InProgressElsewhereError,
  isHealthyUnfinished,
} from "../core/errors.ts";
import { failureContext } from "../core/failureContext.ts";
import { METRIC } from "../observability/telemetry.ts";
import { fullJitterDelaySeconds } from "./backoff.ts";
import { parkInDeadLetterQueue } from "./deadLetter.ts";
import type { SettlementContext } from "./sqsSettlement.ts";

/** The record's receive count: 1 on its first delivery. */
export const receiveCount = (record: SQSRecord) => Number(record.attributes.ApproximateReceiveCount ?? 1);

/** Unfinished, to come back after the backoff of its receive count, and no sooner than `atLeastSeconds`. */
function retryAfterBackoff(
  ctx: SettlementContext,
  record: SQSRecord,
  error: unknown,
  atLeastSeconds = 0,
): RecordOutcome {
  return unfinished(
    error,
    Math.max(fullJitterDelaySeconds(receiveCount(record), ctx.backoff), atLeastSeconds),
  );
}

/** Parks the record in its dead-letter queue with its failure context; retried when it cannot be. */
export async function parkRecord(
  ctx: SettlementContext,
  record: SQSRecord,
  error: unknown,
): Promise<RecordOutcome> {
  const { telemetry } = ctx;
  const attempt = receiveCount(record);
  const deadLetterUrl = ctx.deadLetterUrl ?? (await ctx.queueOf(record.eventSourceARN))?.deadLetterUrl;
  if (!deadLetterUrl) {
    telemetry.count(METRIC.parkFailures);
    telemetry.logger.error("permanent failure but no dead-letter queue to park it in", {
      messageId: record.messageId,
      error: describeError(error),
    });
    return retryAfterBackoff(ctx, record, error);
  }
  const firstReceive = Number(record.attributes.ApproximateFirstReceiveTimestamp);
  try {
    const parked = parkInDeadLetterQueue(
      ctx.sqs,
      deadLetterUrl,
      record,
      failureContext({
        error,
        messageId: record.messageId,
        consumer: ctx.consumer,
        retryCount: attempt - 1,
        previousFirstFailedAt: attempt > 1 && firstReceive ? new Date(firstReceive).toISOString() : undefined,
        originalQueue: record.eventSourceARN,
      }),
      ctx.deadline,
    );
    await beforeDeadline(parked, ctx.deadline);
  } catch (parkError) {
    // Not parked means not acked: the record stays in the source queue.
    telemetry.count(METRIC.parkFailures);
    telemetry.logger.error("could not park a record in the DLQ", {
      messageId: record.messageId,
      error: parkError,
    });
    return retryAfterBackoff(ctx, record, parkError);
  }
  telemetry.count(METRIC.permanentFailures);
  telemetry.logger.warn("record parked in the dead-letter queue", {
    messageId: record.messageId,
    error: describeError(error),
    ...(telemetry.logPayloads ? { body: record.body } : {}),
  });
  return done("parked");
}

/**
 * Permanent errors are parked at once. A failed record on its last allowed receive is parked by
 * us, with its context (the queue's own redrive would move it without any); on FIFO the records
 * held back behind it then run in the same batch. A healthy one (held elsewhere, held back) is
 * never parked here: it did not fail (see `requeueHealthy`).
 */
export async function failRecord(
  ctx: SettlementContext,
  record: SQSRecord,
  error: unknown,
  retryAtMs?: number,
): Promise<RecordOutcome> {
  const { telemetry } = ctx;
  if (classifyError(error) === "permanent") return parkRecord(ctx, record, error);
  const attempt = receiveCount(record);
  const q = await ctx.queueOf(record.eventSourceARN);
  if (!isHealthyUnfinished(error) && q?.maxReceiveCount !== undefined && attempt >= q.maxReceiveCount)
    return parkRecord(ctx, record, error);
  telemetry.count(
    error instanceof InProgressElsewhereError ? METRIC.inProgressElsewhere : METRIC.transientFailures,
  );
  telemetry.logger.warn("record failed; it will be retried", {
    messageId: record.messageId,
    attempt,
    error: describeError(error),
  });
  // Come back when the other holder's lease ends, not after a blind backoff.
  const wait = retryAtMs === undefined ? 0 : Math.ceil((retryAtMs - ctx.now()) / 1000) + 1;
  return retryAfterBackoff(ctx, record, error, wait);
}
