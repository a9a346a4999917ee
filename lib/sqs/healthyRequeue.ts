/**
 * Healthy records on their last receive (held by another invocation, held back, or not started
 * for lack of time: `atLastReceive`) did not fail, and must not reach the DLQ for it. On a standard
 * queue each gets a fresh copy, sent to its own queue, and the original is acked once SQS accepted
 * the copy; on a FIFO queue (where a copy would go behind its group's later messages) it is parked
 * with its context.
 */
import { SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import type { RecordPlan } from "../batch/batchPlan.ts";
import { beforeDeadline } from "../batch/lambdaDeadline.ts";
import { done, type RecordOutcome } from "../batch/recordOutcome.ts";
import { describeError, isHealthyUnfinished } from "../core/errors.ts";
import { METRIC } from "../observability/telemetry.ts";
import { fitAttributes, withMessageId } from "./attributePacking.ts";
import { plainAttributes, toSdkAttributes } from "./deadLetter.ts";
import { atLastReceive } from "./sqsAnswer.ts";
import { parkRecord, receiveCount } from "./sqsFailures.ts";
import { chunkSqsBatch, SQS_LIMITS, sqsEntryBytes } from "./sqsLimits.ts";
import type { SettlementContext } from "./sqsSettlement.ts";

type SqsPlan = RecordPlan<SQSRecord, unknown>;

/**
 * Healthy records on their last receive (see `atLastReceive`): fresh copies on a standard queue,
 * the originals acked; parked with their context on a FIFO queue. Sets the plans' outcomes.
 */
export async function requeueHealthy(
  ctx: SettlementContext,
  plans: ReadonlyArray<SqsPlan>,
  fifo: boolean,
): Promise<void> {
  const byQueue = new Map<string, SqsPlan[]>();
  for (const p of plans) {
    // Only a healthy unfinished record needs its queue's maxReceiveCount (a lookup otherwise saved).
    if (p.outcome?.kind !== "unfinished" || !isHealthyUnfinished(p.outcome.error)) continue;
    const q = await ctx.queueOf(p.record.eventSourceARN);
    const count = receiveCount(p.record);
    const what = atLastReceive({
      outcome: p.outcome,
      receiveCount: count,
      maxReceiveCount: q?.maxReceiveCount,
      fifo,
    });
    if (what === "requeue" && q) byQueue.set(q.url, [...(byQueue.get(q.url) ?? []), p]);
    if (what === "park" && p.outcome?.kind === "unfinished")
      p.outcome = await parkRecord(ctx, p.record, p.outcome.error);
  }
  for (const [url, due] of byQueue) {
    // SendMessageBatch refuses the whole call past 10 entries or 1 MiB: chunk by both.
    const copies = due.map((plan, j) => ({ plan, entry: copyEntry(plan, j) }));
    for (const chunk of chunkSqsBatch(copies, (c) => sqsEntryBytes(c.entry))) await requeue(ctx, url, chunk);
  }
}

/** One SendMessageBatch of copies; only the entries SQS accepted are acked. */
async function requeue(
  ctx: SettlementContext,
  url: string,
  chunk: ReadonlyArray<{ plan: SqsPlan; entry: ReturnType<typeof copyEntry> }>,
) {
  const byId = new Map(chunk.map((c) => [c.entry.Id, c.plan]));
  const send = ctx.sqs.send(
    new SendMessageBatchCommand({ QueueUrl: url, Entries: chunk.map((c) => c.entry) }),
    { abortSignal: ctx.deadline },
  );
  const out = await beforeDeadline(send, ctx.deadline).catch((error: unknown) => {
    ctx.telemetry.logger.warn("could not requeue healthy records", { error: describeError(error) });
    return { Successful: [] };
  });
  for (const ok of out.Successful ?? []) {
    const p = ok.Id === undefined ? undefined : byId.get(ok.Id);
    if (!p) continue;
    p.outcome = done("requeued");
    ctx.telemetry.count(METRIC.requeued);
  }
}

const delayOf = (o: RecordOutcome | undefined) => (o?.kind === "unfinished" ? o.delaySeconds : 0);

/** The fresh copy of a healthy record: same body and attributes, its wait as its delay, its group kept. */
function copyEntry(p: SqsPlan, j: number) {
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
function copyAttributes(p: SqsPlan) {
  const attributes = plainAttributes(p.record);
  const envelope = p.decoded.ok ? p.decoded.envelope : undefined;
  if (!envelope || envelope.idSource === "business") return fitAttributes(attributes);
  return withMessageId(attributes, envelope.id);
}
