/**
 * The SQS adapter's side of the stages: where a failed record goes (backoff, or parked with its
 * context: sqsFailures.ts), the copies that spare a healthy record's receives (healthyRequeue.ts),
 * and the answer's visibility changes. Built per invocation: its queue lookups are the invocation's own.
 */
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSRecord } from "aws-lambda";
import { type RecordPlan, unfinishedOf } from "../batch/batchPlan.ts";
import { beforeDeadline } from "../batch/lambdaDeadline.ts";
import type { RecordOutcome } from "../batch/recordOutcome.ts";
import type { DedupStore } from "../dedup/dedupStore.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import type { BackoffPolicy } from "./backoff.ts";
import { requeueHealthy } from "./healthyRequeue.ts";
import type { QueueInfo, QueueResolver } from "./queueResolver.ts";
import { sqsAnswer } from "./sqsAnswer.ts";
import { failRecord, parkRecord } from "./sqsFailures.ts";
import { changeVisibility, MAX_VISIBILITY_SECONDS } from "./visibility.ts";
import { type HeartbeatOptions, VisibilityHeartbeat } from "./visibilityHeartbeat.ts";

/** What the settlement needs: the processor's clients and policies, and the invocation's consumer name. */
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

/** What every settlement stage of one invocation gets: the deps, and the invocation's queue lookups. */
export interface SettlementContext extends SqsSettlementDeps {
  /** The source queue of an ARN (its URL, DLQ and maxReceiveCount); undefined when it can't be resolved. */
  readonly queueOf: (arn: string) => Promise<QueueInfo | undefined>;
}

/** What a batch's heartbeat watches, from the invocation. */
export interface HeartbeatBatch {
  readonly dedup: DedupStore | undefined;
  /** The invocation's remaining time (`openInvocation`'s guarded clock). */
  readonly remainingMs: () => number;
  readonly started: number;
  readonly options: HeartbeatOptions | false | undefined;
}

/** The settlement stages of one invocation, bound to its queue lookups. */
export function sqsSettlement(deps: SqsSettlementDeps) {
  const ctx: SettlementContext = { ...deps, queueOf: queueLookup(deps) };
  return {
    queueOf: ctx.queueOf,
    park: (record: SQSRecord, error: unknown): Promise<RecordOutcome> => parkRecord(ctx, record, error),
    fail: (record: SQSRecord, error: unknown, retryAtMs?: number): Promise<RecordOutcome> =>
      failRecord(ctx, record, error, retryAtMs),
    requeueHealthy: (plans: ReadonlyArray<RecordPlan<SQSRecord, unknown>>, fifo: boolean) =>
      requeueHealthy(ctx, plans, fifo),
    answer: (plans: ReadonlyArray<RecordPlan<SQSRecord, unknown>>, fifo: boolean) => answer(ctx, plans, fifo),
    startHeartbeat: (first: SQSRecord | undefined, batch: HeartbeatBatch) =>
      startHeartbeat(ctx, first, batch),
  };
}

/**
 * Each queue looked up once per invocation; a failed lookup is logged and answered undefined.
 * A lookup not answered by the settlement deadline is a queue not found (nothing acked for it).
 */
function queueLookup(deps: SqsSettlementDeps): SettlementContext["queueOf"] {
  const queues = new Map<string, Promise<QueueInfo | undefined>>();
  return (arn) => {
    let q = queues.get(arn);
    if (!q) {
      q = deps.resolver.resolve(arn, { deadLetterUrl: deps.deadLetterUrl }).catch((error) => {
        deps.telemetry.logger.error("could not resolve the source queue", { queueArn: arn, error });
        return undefined;
      });
      queues.set(arn, q);
    }
    return beforeDeadline(q, deps.deadline).catch(() => undefined);
  };
}

/**
 * The partial batch response; unfinished records get their retry delay as their visibility (on a
 * FIFO queue, the records held back behind a group's failed one get at least its delay: `sqsAnswer`).
 */
async function answer(
  ctx: SettlementContext,
  plans: ReadonlyArray<RecordPlan<SQSRecord, unknown>>,
  fifo: boolean,
): Promise<SQSBatchResponse> {
  const groupOf = fifo ? (r: SQSRecord) => r.attributes.MessageGroupId ?? "" : undefined;
  const { batchItemFailures, visibility } = sqsAnswer(unfinishedOf(plans), groupOf);
  await Promise.all(
    [...visibility].map(async ([arn, changes]) => {
      const q = await ctx.queueOf(arn);
      if (!q) return;
      const failed = await changeVisibility(
        ctx.sqs,
        q.url,
        changes.map((c) => ({ ...c, seconds: Math.min(c.seconds, MAX_VISIBILITY_SECONDS) })),
        ctx.deadline,
      );
      if (failed.length > 0)
        ctx.telemetry.logger.warn("could not set retry visibility", { messageIds: failed });
    }),
  );
  return { batchItemFailures };
}

/**
 * One heartbeat for the batch: every unfinished record has been invisible since the receive. The
 * queue is looked up only when a beat is due, so a short batch makes no SQS call for it.
 */
function startHeartbeat(
  ctx: SettlementContext,
  first: SQSRecord | undefined,
  batch: HeartbeatBatch,
): VisibilityHeartbeat | undefined {
  if (batch.options === false || !first) return undefined;
  return new VisibilityHeartbeat(
    {
      sqs: ctx.sqs,
      queue: () => ctx.queueOf(first.eventSourceARN),
      dedup: batch.dedup,
      remainingMs: batch.remainingMs,
      receivedAtMs: batch.started,
      telemetry: ctx.telemetry,
    },
    batch.options,
  );
}
