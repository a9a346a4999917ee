/**
 * Where a failed stream record goes. A stream has no visibility and no requeue: a record is either
 * done (processed, a duplicate, or parked with its context) or handed back to Lambda, which resends
 * its shard from the lowest reported sequence number (`streamAnswer.ts`).
 *
 * - Transient (and any unknown error): handed back; Lambda retries (its `MaximumRetryAttempts`,
 *   `MaximumRecordAgeInSeconds` and on-failure destination bound that). A record whose key is held
 *   under its own delivery (an earlier invocation of this very record died holding the lease: a
 *   crash, a timeout) is handed back once that lease has ended, as far as the invocation's time
 *   allows: Lambda resends a stream batch at once, so without the wait its retries would all meet
 *   the dead lease and send a record that never failed to the on-failure destination.
 * - Permanent (bad input, schema mismatch, a business rule): parked in the parking queue with its
 *   payload and context, and done (`routed`: the park is recorded in its dedup record), so the
 *   shard moves on. A record that cannot be parked, or a
 *   consumer without a parking queue, hands it back instead: never dropped.
 */
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { RecordPlan } from "../batch/batchPlan.ts";
import { beforeDeadline } from "../batch/lambdaDeadline.ts";
import { done, type RecordOutcome, unfinished } from "../batch/recordOutcome.ts";
import type { Envelope } from "../core/envelope.ts";
import {
  classifyError,
  DeliveryInProgressError,
  describeError,
  InProgressElsewhereError,
} from "../core/errors.ts";
import { failureContext } from "../core/failureContext.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import type { ParkedPayload } from "./parkedPayload.ts";
import type { StreamCoordinates } from "./streamAnswer.ts";
import { parkStreamRecord } from "./streamParking.ts";

/** What a failure needs to know of a record, from its source. */
export interface FailureSource<R> {
  readonly coordinates: (record: R) => StreamCoordinates;
  readonly orderingKey: (record: R) => string | undefined;
  readonly payload: (record: R) => ParkedPayload;
  /** The last-resort dedup key, for the context of a record that could not be decoded. */
  readonly brokerId: (record: R) => string;
  readonly describe: (record: R) => Record<string, unknown>;
}

/** One invocation's settlement of failures. */
export interface StreamFailureContext<R> {
  readonly source: FailureSource<R>;
  readonly sqs: SQSClient;
  /** The parking queue; undefined: permanent failures are handed back to Lambda. */
  readonly parkingUrl: string | undefined;
  readonly consumer: string;
  readonly telemetry: Telemetry;
  /** The settlement deadline: a park still pending then is cut, and the record handed back. */
  readonly deadline: AbortSignal;
  /**
   * Waits until `untilMs` (epoch ms), or less when the invocation's time does not allow it: the end
   * of a lease held under the record's own delivery.
   */
  readonly waitForLease: (untilMs: number) => Promise<void>;
}

/** A failed or undecodable record: parked (permanent, with a parking queue) or handed back. */
export async function failStreamRecord<R, T, E extends Envelope<T>>(
  ctx: StreamFailureContext<R>,
  p: RecordPlan<R, T, E>,
  error: unknown,
  retryAtMs?: number,
): Promise<RecordOutcome> {
  const { telemetry, source } = ctx;
  const kind = classifyError(error);
  const described = { ...source.describe(p.record), error: describeError(error) };
  if (kind === "transient") {
    // Held by a dead invocation of this delivery: the hand-back waits for its lease (`retryAtMs`).
    if (error instanceof DeliveryInProgressError && retryAtMs !== undefined)
      await ctx.waitForLease(retryAtMs);
    telemetry.count(
      error instanceof InProgressElsewhereError ? METRIC.inProgressElsewhere : METRIC.transientFailures,
    );
    telemetry.logger.warn("record failed; handed back to Lambda for a retry", described);
    return unfinished(error);
  }
  if (ctx.parkingUrl === undefined) {
    telemetry.count(METRIC.parkFailures);
    telemetry.logger.error("permanent failure and no parking queue: handed back to Lambda", described);
    return unfinished(error);
  }
  const coordinates = source.coordinates(p.record);
  try {
    const parked = parkStreamRecord(
      ctx.sqs,
      ctx.parkingUrl,
      {
        payload: source.payload(p.record),
        coordinates,
        orderingKey: source.orderingKey(p.record),
        context: failureContext({
          error,
          messageId: p.decoded.ok ? p.decoded.envelope.id : source.brokerId(p.record),
          consumer: ctx.consumer,
          // Lambda does not say how often it delivered a stream record before; a permanent error
          // is parked at its first failure.
          retryCount: 0,
          originalTopic: coordinates.streamArn,
          ...(coordinates.shardId !== undefined ? { originalPartition: coordinates.shardId } : {}),
          originalOffset: coordinates.sequenceNumber,
        }),
      },
      ctx.deadline,
    );
    await beforeDeadline(parked, ctx.deadline);
  } catch (parkError) {
    // Not parked means not acked: the record is handed back, and its shard waits for it.
    telemetry.count(METRIC.parkFailures);
    telemetry.logger.error("could not park a record; handed back to Lambda", {
      ...described,
      parkError: describeError(parkError),
    });
    return unfinished(parkError);
  }
  telemetry.count(METRIC.permanentFailures);
  telemetry.logger.warn("record parked in the parking queue", described);
  // Routed, not merely parked: its lease is kept and the park recorded as its route under its
  // delivery (`streamBatchProcessor.ts`), so that Lambda resending it from an earlier checkpoint
  // finds it parked instead of parking it again.
  return done("routed");
}
