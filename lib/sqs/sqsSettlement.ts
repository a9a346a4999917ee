/**
 * The SQS adapter's side of the stages: where a failed record goes (backoff, or parked with its
 * context), the copies that spare a healthy record's receives, and the answer's visibility changes.
 * Built per invocation: its queue lookups are the invocation's own.
 */
import { SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSRecord } from "aws-lambda";
import { type RecordPlan, unfinishedOf } from "../batch/batchPlan.ts";
import { beforeDeadline } from "../batch/lambdaDeadline.ts";
import { done, type RecordOutcome, unfinished } from "../batch/recordOutcome.ts";
import {
  classifyError,
  describeError,
  InProgressElsewhereError,
  isHealthyUnfinished,
} from "../core/errors.ts";
import { failureContext } from "../core/failureContext.ts";
import type { DedupStore } from "../dedup/dedupStore.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { fitAttributes, withMessageId } from "./attributePacking.ts";
import { type BackoffPolicy, fullJitterDelaySeconds } from "./backoff.ts";
import { parkInDeadLetterQueue, plainAttributes, toSdkAttributes } from "./deadLetter.ts";
import type { QueueInfo, QueueResolver } from "./queueResolver.ts";
import { atLastReceive, sqsAnswer } from "./sqsAnswer.ts";
import { chunkSqsBatch, SQS_LIMITS, sqsEntryBytes } from "./sqsLimits.ts";
import { changeVisibility, MAX_VISIBILITY_SECONDS } from "./visibility.ts";
import { type HeartbeatOptions, VisibilityHeartbeat } from "./visibilityHeartbeat.ts";

export interface SqsSettlementDeps {
  readonly sqs: SQSClient;
  readonly resolver: QueueResolver;
  readonly telemetry: Telemetry;
  readonly backoff: BackoffPolicy;
  /** An explicit DLQ (option or DLQ_URL) needs no lookup, so parking works when the source queue can't be resolved. */
  readonly deadLetterUrl: string | undefined;
  readonly consumer: string;
  readonly now: () => number;
  /**
   * The settlement deadline (`lambdaDeadline`): every call made here is cancelled when it aborts,
   * and a record whose call did not answer by then is not acked on its account.
   */
  readonly deadline: AbortSignal;
}

const receiveCount = (record: SQSRecord) => Number(record.attributes.ApproximateReceiveCount ?? 1);

export function sqsSettlement(deps: SqsSettlementDeps) {
  const { sqs, telemetry, backoff, deadline } = deps;
  const queues = new Map<string, Promise<QueueInfo | undefined>>();
  // A lookup not answered by the settlement deadline is a queue not found (nothing acked for it).
  const queueOf = (arn: string) => {
    let q = queues.get(arn);
    if (!q) {
      q = deps.resolver.resolve(arn, { deadLetterUrl: deps.deadLetterUrl }).catch((error) => {
        telemetry.logger.error("could not resolve the source queue", { queueArn: arn, error });
        return undefined;
      });
      queues.set(arn, q);
    }
    return beforeDeadline(q, deadline).catch(() => undefined);
  };
  const retry = (record: SQSRecord, error: unknown, atLeastSeconds = 0) =>
    unfinished(error, Math.max(fullJitterDelaySeconds(receiveCount(record), backoff), atLeastSeconds));

  async function park(record: SQSRecord, error: unknown): Promise<RecordOutcome> {
    const attempt = receiveCount(record);
    const deadLetterUrl = deps.deadLetterUrl ?? (await queueOf(record.eventSourceARN))?.deadLetterUrl;
    if (!deadLetterUrl) {
      telemetry.count(METRIC.parkFailures);
      telemetry.logger.error("permanent failure but no dead-letter queue to park it in", {
        messageId: record.messageId,
        error: describeError(error),
      });
      return retry(record, error);
    }
    const firstReceive = Number(record.attributes.ApproximateFirstReceiveTimestamp);
    try {
      const parked = parkInDeadLetterQueue(
        sqs,
        deadLetterUrl,
        record,
        failureContext({
          error,
          messageId: record.messageId,
          consumer: deps.consumer,
          retryCount: attempt - 1,
          previousFirstFailedAt:
            attempt > 1 && firstReceive ? new Date(firstReceive).toISOString() : undefined,
          originalQueue: record.eventSourceARN,
        }),
        deadline,
      );
      await beforeDeadline(parked, deadline);
    } catch (parkError) {
      // Not parked means not acked: the record stays in the source queue.
      telemetry.count(METRIC.parkFailures);
      telemetry.logger.error("could not park a record in the DLQ", {
        messageId: record.messageId,
        error: parkError,
      });
      return retry(record, parkError);
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
  async function fail(record: SQSRecord, error: unknown, retryAtMs?: number): Promise<RecordOutcome> {
    if (classifyError(error) === "permanent") return park(record, error);
    const attempt = receiveCount(record);
    const q = await queueOf(record.eventSourceARN);
    if (!isHealthyUnfinished(error) && q?.maxReceiveCount !== undefined && attempt >= q.maxReceiveCount)
      return park(record, error);
    telemetry.count(
      error instanceof InProgressElsewhereError ? METRIC.inProgressElsewhere : METRIC.transientFailures,
    );
    telemetry.logger.warn("record failed; it will be retried", {
      messageId: record.messageId,
      attempt,
      error: describeError(error),
    });
    // Come back when the other holder's lease ends, not after a blind backoff.
    const wait = retryAtMs === undefined ? 0 : Math.ceil((retryAtMs - deps.now()) / 1000) + 1;
    return retry(record, error, wait);
  }

  /**
   * Healthy records on their last receive (see `atLastReceive`): fresh copies on a standard queue,
   * the originals acked; parked with their context on a FIFO queue.
   */
  async function requeueHealthy(plans: ReadonlyArray<RecordPlan<SQSRecord, unknown>>, fifo: boolean) {
    const byQueue = new Map<string, RecordPlan<SQSRecord, unknown>[]>();
    for (const p of plans) {
      // Only a healthy unfinished record needs its queue's maxReceiveCount (a lookup otherwise saved).
      if (p.outcome?.kind !== "unfinished" || !isHealthyUnfinished(p.outcome.error)) continue;
      const q = await queueOf(p.record.eventSourceARN);
      const count = receiveCount(p.record);
      const what = atLastReceive({
        outcome: p.outcome,
        receiveCount: count,
        maxReceiveCount: q?.maxReceiveCount,
        fifo,
      });
      if (what === "requeue" && q) byQueue.set(q.url, [...(byQueue.get(q.url) ?? []), p]);
      if (what === "park" && p.outcome?.kind === "unfinished")
        p.outcome = await park(p.record, p.outcome.error);
    }
    for (const [url, due] of byQueue) {
      // SendMessageBatch refuses the whole call past 10 entries or 1 MiB: chunk by both.
      const copies = due.map((plan, j) => ({ plan, entry: copyEntry(plan, j) }));
      for (const chunk of chunkSqsBatch(copies, (c) => sqsEntryBytes(c.entry))) await requeue(url, chunk);
    }
  }

  /** One SendMessageBatch of copies; only the entries SQS accepted are acked. */
  async function requeue(
    url: string,
    chunk: ReadonlyArray<{ plan: RecordPlan<SQSRecord, unknown>; entry: ReturnType<typeof copyEntry> }>,
  ) {
    const byId = new Map(chunk.map((c) => [c.entry.Id, c.plan]));
    const send = sqs.send(
      new SendMessageBatchCommand({ QueueUrl: url, Entries: chunk.map((c) => c.entry) }),
      { abortSignal: deadline },
    );
    const out = await beforeDeadline(send, deadline).catch((error: unknown) => {
      telemetry.logger.warn("could not requeue healthy records", { error: describeError(error) });
      return { Successful: [] };
    });
    for (const ok of out.Successful ?? []) {
      const p = ok.Id === undefined ? undefined : byId.get(ok.Id);
      if (!p) continue;
      p.outcome = done("requeued");
      telemetry.count(METRIC.requeued);
    }
  }

  /**
   * The partial batch response; unfinished records get their retry delay as their visibility (on a
   * FIFO queue, the records held back behind a group's failed one get at least its delay: `sqsAnswer`).
   */
  async function answer(
    plans: ReadonlyArray<RecordPlan<SQSRecord, unknown>>,
    fifo: boolean,
  ): Promise<SQSBatchResponse> {
    const groupOf = fifo ? (r: SQSRecord) => r.attributes.MessageGroupId ?? "" : undefined;
    const { batchItemFailures, visibility } = sqsAnswer(unfinishedOf(plans), groupOf);
    await Promise.all(
      [...visibility].map(async ([arn, changes]) => {
        const q = await queueOf(arn);
        if (!q) return;
        const failed = await changeVisibility(
          sqs,
          q.url,
          changes.map((c) => ({ ...c, seconds: Math.min(c.seconds, MAX_VISIBILITY_SECONDS) })),
          deadline,
        );
        if (failed.length > 0)
          telemetry.logger.warn("could not set retry visibility", { messageIds: failed });
      }),
    );
    return { batchItemFailures };
  }

  /**
   * One heartbeat for the batch: every unfinished record has been invisible since the receive. The
   * queue is looked up only when a beat is due, so a short batch makes no SQS call for it.
   */
  function startHeartbeat(
    first: SQSRecord | undefined,
    batch: {
      dedup: DedupStore | undefined;
      /** The invocation's remaining time (`openInvocation`'s guarded clock). */
      remainingMs: () => number;
      started: number;
      options: HeartbeatOptions | false | undefined;
    },
  ): VisibilityHeartbeat | undefined {
    if (batch.options === false || !first) return undefined;
    return new VisibilityHeartbeat(
      {
        sqs,
        queue: () => queueOf(first.eventSourceARN),
        dedup: batch.dedup,
        remainingMs: batch.remainingMs,
        receivedAtMs: batch.started,
        telemetry,
      },
      batch.options,
    );
  }

  return { queueOf, park, fail, requeueHealthy, answer, startHeartbeat };
}

const delayOf = (o: RecordOutcome | undefined) => (o?.kind === "unfinished" ? o.delaySeconds : 0);

/** The fresh copy of a healthy record: same body and attributes, its wait as its delay, its group kept. */
function copyEntry(p: RecordPlan<SQSRecord, unknown>, j: number) {
  const group = p.record.attributes.MessageGroupId;
  return {
    Id: String(j),
    MessageBody: p.record.body,
    DelaySeconds: Math.min(SQS_LIMITS.maxDelaySeconds, Math.round(delayOf(p.outcome))),
    MessageAttributes: toSdkAttributes(copyAttributes(p)),
    // A fair queue's record (a standard queue with group ids) keeps its tenant on the copy.
    ...(group !== undefined ? { MessageGroupId: group } : {}),
  };
}

/**
 * The copy keeps the user's attributes and carries the id its record deduplicated under
 * (`withMessageId`): a producer id, one carried from a redrive (inside `x-failure-context` or
 * `x-folded-attributes`, which `plainAttributes` leaves out) or the broker's messageId, which the
 * copy will not share. Checking only for a broker id lost a carried one: the copy of a redriven
 * record then ran again under its new messageId while its first delivery could still be running
 * elsewhere (issue 34). A business key needs nothing: it is read from the body again. Unfolded
 * attributes past SQS's 10 (a folded record's) are folded again.
 */
function copyAttributes(p: RecordPlan<SQSRecord, unknown>) {
  const attributes = plainAttributes(p.record);
  const envelope = p.decoded.ok ? p.decoded.envelope : undefined;
  if (!envelope || envelope.idSource === "business") return fitAttributes(attributes);
  return withMessageId(attributes, envelope.id);
}
