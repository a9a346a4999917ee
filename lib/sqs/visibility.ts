import { ChangeMessageVisibilityBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { beforeDeadline } from "../batch/lambdaDeadline.ts";
import { SQS_LIMITS } from "./sqsLimits.ts";

/** One record's new visibility timeout. */
export interface VisibilityChange {
  readonly id: string;
  readonly receiptHandle: string;
  readonly seconds: number;
}

/** SQS's ceiling on a message's visibility, counted from its receive (`SQS_LIMITS`). */
export const MAX_VISIBILITY_SECONDS = SQS_LIMITS.maxVisibilitySeconds;

/**
 * ChangeMessageVisibilityBatch, 10 entries a call. Returns the ids that failed (the batch call
 * reports failures per entry), so callers can count them; it never throws for one bad entry.
 * `abortSignal` (the settlement deadline) cancels the calls still open: their ids count as failed.
 */
export async function changeVisibility(
  sqs: SQSClient,
  queueUrl: string,
  changes: ReadonlyArray<VisibilityChange>,
  abortSignal?: AbortSignal,
): Promise<string[]> {
  const failed: string[] = [];
  const calls = [];
  for (let i = 0; i < changes.length; i += 10) {
    const chunk = changes.slice(i, i + 10);
    const call = sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((c, j) => ({
          Id: String(j),
          ReceiptHandle: c.receiptHandle,
          VisibilityTimeout: Math.max(0, Math.min(MAX_VISIBILITY_SECONDS, Math.round(c.seconds))),
        })),
      }),
      abortSignal ? { abortSignal } : {},
    );
    calls.push(
      (abortSignal ? beforeDeadline(call, abortSignal) : call).then(
        (out) => {
          for (const f of out.Failed ?? []) failed.push(chunk[Number(f.Id)]!.id);
        },
        () => {
          for (const c of chunk) failed.push(c.id);
        },
      ),
    );
  }
  await Promise.all(calls);
  return failed;
}
