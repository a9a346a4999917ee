import { setTimeout as sleep } from "node:timers/promises";
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import type { SqsMapping } from "../../runtime/model.ts";
import { filterView, matchesAnyFilter } from "../lambda/eventFilter.ts";
import type { FunctionHost } from "../lambda/functionHost.ts";
import { toSqsRecord } from "./trigger.ts";

/** Lambda's SQS pollers start at five; a mapping without MaximumConcurrency gets five locally. */
export const DEFAULT_SQS_POLLERS = 5;
/** Lambda long-polls SQS for 20 s. */
const LONG_POLL_SECONDS = 20;
/** The invocation payload limit for a synchronous invoke. */
const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;

export interface EventSourceStats {
  batches: number;
  records: number;
  succeeded: number;
  failed: number;
  filtered: number;
  functionErrors: number;
  discarded: number;
  /** Pollers restarted after their client gave up (a Kafka member that crashed and joined anew). */
  restarts: number;
  /** The latest function error, `errorType: errorMessage` (a local stand-in for the function's logs). */
  lastError?: string;
}

export interface EventSource {
  readonly mapping: { readonly logicalId: string; readonly functionName: string; readonly kind: string };
  readonly stats: EventSourceStats;
  start(): Promise<void>;
  /** Stops polling and waits for the invocations in flight. */
  stop(): Promise<void>;
  /** Batches being invoked (or retried) right now. */
  inFlight(): number;
}

export const newStats = (): EventSourceStats => ({
  batches: 0,
  records: 0,
  succeeded: 0,
  failed: 0,
  filtered: 0,
  functionErrors: 0,
  discarded: 0,
  restarts: 0,
});

/**
 * The SQS event source mapping, as Lambda documents it:
 * - pollers long-poll (20 s) and invoke synchronously, one batch each at a time; their number is
 *   the mapping's MaximumConcurrency (else five);
 * - a batch is up to BatchSize messages: one ReceiveMessage when there is no batching window,
 *   otherwise receives until the batch is full, the window has passed or the payload nears 6 MB;
 * - messages that match no filter are deleted without an invocation;
 * - success deletes the batch; a function error (or timeout) deletes nothing, and the messages
 *   come back when their visibility timeout ends (Lambda never changes visibility itself);
 * - with ReportBatchItemFailures, only the messages not listed in `batchItemFailures` are deleted;
 *   a response naming an empty, null or unknown itemIdentifier fails the whole batch. Without it,
 *   any response is a full success.
 */
export function sqsEventSource(mapping: SqsMapping, host: FunctionHost, sqs: SQSClient): EventSource {
  const stats = newStats();
  const abort = new AbortController();
  const pollers: Promise<void>[] = [];
  let inFlight = 0;
  const pollerCount = mapping.maxConcurrency ?? DEFAULT_SQS_POLLERS;
  const windowMs = mapping.maxBatchingWindowSeconds * 1000;

  const receive = async (max: number, waitSeconds: number): Promise<Message[]> => {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: mapping.queue.url,
        MaxNumberOfMessages: Math.min(10, max),
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ["All"],
        MessageAttributeNames: ["All"],
      }),
      { abortSignal: abort.signal },
    );
    return out.Messages ?? [];
  };

  const collect = async (): Promise<Message[]> => {
    const batch = await receive(mapping.batchSize, LONG_POLL_SECONDS);
    if (batch.length === 0 || windowMs <= 0) return batch;
    const until = Date.now() + windowMs;
    let bytes = batch.reduce((n, m) => n + (m.Body?.length ?? 0), 0);
    while (batch.length < mapping.batchSize && bytes < MAX_PAYLOAD_BYTES / 2 && Date.now() < until) {
      const left = Math.ceil((until - Date.now()) / 1000);
      const more = await receive(
        mapping.batchSize - batch.length,
        Math.min(LONG_POLL_SECONDS, Math.max(0, left)),
      );
      if (more.length === 0 && left <= 0) break;
      batch.push(...more);
      bytes += more.reduce((n, m) => n + (m.Body?.length ?? 0), 0);
    }
    return batch;
  };

  const remove = async (messages: Message[]) => {
    for (let i = 0; i < messages.length; i += 10) {
      const chunk = messages.slice(i, i + 10);
      const out = await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: mapping.queue.url,
          Entries: chunk.map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
      if (out.Failed?.length) {
        process.emitWarning(
          `${mapping.logicalId}: ${out.Failed.length} deletes failed (${out.Failed[0]?.Message})`,
        );
      }
    }
  };

  const handleBatch = async (messages: Message[]) => {
    const records = messages.map((m) => toSqsRecord(m, mapping.queue.arn));
    const pass: typeof records = [];
    const dropped: Message[] = [];
    records.forEach((r, i) => {
      if (matchesAnyFilter(mapping.filters, { ...r, body: filterView(r.body) })) pass.push(r);
      else dropped.push(messages[i]!);
    });
    stats.filtered += dropped.length;
    if (dropped.length) await remove(dropped);
    if (pass.length === 0) return;
    stats.batches++;
    stats.records += pass.length;
    const event: SQSEvent = { Records: pass };
    const result = await host.invoke(mapping.functionName, event);
    const byId = new Map(messages.map((m) => [m.MessageId!, m]));
    if (!result.ok) {
      stats.functionErrors++;
      stats.lastError = `${result.errorType}: ${result.errorMessage}`;
      stats.failed += pass.length;
      return;
    }
    const response = result.value as Partial<SQSBatchResponse> | null;
    const failures = mapping.reportBatchItemFailures ? (response?.batchItemFailures ?? []) : [];
    if (failures.length === 0) {
      stats.succeeded += pass.length;
      await remove(pass.map((r) => byId.get(r.messageId)!));
      return;
    }
    const ids = new Set(pass.map((r) => r.messageId));
    const invalid = failures.some((f) => typeof f?.itemIdentifier !== "string" || !ids.has(f.itemIdentifier));
    if (invalid) {
      stats.failed += pass.length;
      return;
    }
    const failed = new Set(failures.map((f) => f.itemIdentifier));
    const ok = pass.filter((r) => !failed.has(r.messageId));
    stats.failed += failed.size;
    stats.succeeded += ok.length;
    await remove(ok.map((r) => byId.get(r.messageId)!));
  };

  const poll = async () => {
    while (!abort.signal.aborted) {
      let messages: Message[];
      try {
        messages = await collect();
      } catch (error) {
        if (abort.signal.aborted) return;
        process.emitWarning(`${mapping.logicalId}: receive failed: ${(error as Error).message}`);
        await sleep(1000, undefined, { signal: abort.signal }).catch(() => undefined);
        continue;
      }
      if (messages.length === 0) continue;
      inFlight++;
      try {
        await handleBatch(messages);
      } catch (error) {
        process.emitWarning(`${mapping.logicalId}: ${(error as Error).message}`);
      } finally {
        inFlight--;
      }
    }
  };

  return {
    mapping,
    stats,
    async start() {
      host.requestConcurrency(mapping.functionName, pollerCount);
      for (let i = 0; i < pollerCount; i++) pollers.push(poll());
    },
    async stop() {
      abort.abort();
      await Promise.allSettled(pollers);
    },
    inFlight: () => inFlight,
  };
}
