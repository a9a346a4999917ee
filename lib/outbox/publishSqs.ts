/**
 * The publisher's SQS side. A standard queue: SendMessageBatch, up to 10 messages and the batch
 * byte limit a call, calls in parallel (a standard queue keeps no order anyway). A FIFO queue:
 * MessageGroupId = aggregate id, MessageDeduplicationId = event id (`toFifoId`), in rounds of at
 * most one message per group, a group's next message sent only after its previous one succeeded.
 * The event's headers become message attributes (`toSqsAttributes`).
 */
import {
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import {
  CONTEXT_ATTRIBUTE,
  FOLDED_ATTRIBUTE,
  foldAttributes,
  type PlainAttribute,
} from "../sqs/attributePacking.ts";
import { toFifoId } from "../sqs/fifoIds.ts";
import { chunkSqsBatch, SQS_LIMITS, sqsEntryBytes } from "../sqs/sqsLimits.ts";
import { PublishFailedError, PublishRejectedError } from "./errors.ts";
import { OUTBOX_HEADERS, type OutboxEvent, type PublishOutcome, publishedHeaders } from "./outboxEvent.ts";
import { behindEarlier } from "./publishOutcomes.ts";
import type { Target } from "./publishRoutes.ts";

const CORE_ATTRIBUTES = new Set<string>(Object.values(OUTBOX_HEADERS));
const VALID_ATTRIBUTE_NAME = /^(?!aws\.|amazon\.)(?!.*\.\.)[A-Za-z0-9_\-.]{1,256}$/i;
/** Our own packing attributes: a user header of that name is folded, never taken for ours. */
const PACKING_ATTRIBUTES = new Set<string>([FOLDED_ATTRIBUTE, CONTEXT_ATTRIBUTE]);

/**
 * Kafka headers → SQS message attributes, never more than 10, never dropping a header. The
 * outbox's own headers (`message-id`, `event-type`, …: 8 of them) are attributes of their own; the
 * user's are too when they fit, else all of them are folded into `x-folded-attributes`
 * (`foldAttributes`), the one folding format every reader of ours unfolds: the SQS consumer's
 * envelope gives them back as headers, as a Kafka consumer sees them. They do not fit when there
 * are more than 2, or one has a name SQS refuses as an attribute name, or an empty value (SQS
 * refuses an empty attribute value).
 */
export function toSqsAttributes(
  headers: Readonly<Record<string, string>>,
): Record<string, MessageAttributeValue> {
  const core: Record<string, MessageAttributeValue> = {};
  const user: Record<string, PlainAttribute> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (CORE_ATTRIBUTES.has(k)) core[k] = { DataType: "String", StringValue: v };
    else user[k] = { DataType: "String", StringValue: v };
  }
  const userNames = Object.keys(user);
  const fits =
    Object.keys(core).length + userNames.length <= SQS_LIMITS.maxAttributes &&
    userNames.every((n) => VALID_ATTRIBUTE_NAME.test(n) && !PACKING_ATTRIBUTES.has(n)) &&
    Object.values(user).every((a) => a.StringValue !== "");
  if (userNames.length === 0) return core;
  return { ...core, ...(fits ? user : foldAttributes(user)) };
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function mapLimit<T>(
  items: ReadonlyArray<T>,
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** What the SQS side needs of its publisher. */
export interface SqsPublishDeps {
  readonly sqs: () => SQSClient;
  /** Total bytes of one SendMessageBatch. */
  readonly maxBatchBytes: number;
  /** SendMessageBatch calls in flight at once. */
  readonly concurrency: number;
  /** The publisher's call counters. */
  readonly calls: { sqsSendMessageBatch: number };
}

type BatchItem = { index: number; entry: SendMessageBatchRequestEntry };

async function sendSqsBatch(
  deps: SqsPublishDeps,
  queueUrl: string,
  batch: ReadonlyArray<BatchItem>,
  outcomes: PublishOutcome[],
): Promise<void> {
  try {
    deps.calls.sqsSendMessageBatch++;
    const out = await deps
      .sqs()
      .send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch.map((b) => b.entry) }));
    const failed = new Map((out.Failed ?? []).map((f) => [f.Id, f]));
    for (const b of batch) {
      const f = failed.get(b.entry.Id);
      if (!f) {
        outcomes[b.index] = { status: "published" };
      } else if (f.SenderFault) {
        outcomes[b.index] = {
          status: "rejected",
          error: new PublishRejectedError(
            `SQS rejected the message (${f.Code}): ${f.Message ?? ""}`.slice(0, 500),
          ),
        };
      } else {
        outcomes[b.index] = {
          status: "failed",
          error: new PublishFailedError(
            `SQS failed the message (${f.Code}): ${f.Message ?? ""}`.slice(0, 500),
          ),
        };
      }
    }
  } catch (error) {
    // The SDK already retried; the whole call failed (network, throttling, queue missing).
    const e = new PublishFailedError(`SendMessageBatch to ${queueUrl} failed: ${(error as Error).message}`, {
      cause: error,
    });
    for (const b of batch) outcomes[b.index] = { status: "failed", error: e };
  }
}

function toEntry(e: OutboxEvent, n: number, fifo: boolean): SendMessageBatchRequestEntry {
  return {
    Id: `m${n}`,
    MessageBody: e.payload,
    MessageAttributes: toSqsAttributes(publishedHeaders(e)),
    ...(fifo ? { MessageGroupId: toFifoId(e.aggregateId), MessageDeduplicationId: toFifoId(e.eventId) } : {}),
  };
}

/** Sends the batches of `items`, at most `concurrency` calls at once. */
function sendChunked(
  deps: SqsPublishDeps,
  queueUrl: string,
  items: ReadonlyArray<BatchItem>,
  outcomes: PublishOutcome[],
): Promise<void> {
  const batches = chunkSqsBatch(items, (item) => sqsEntryBytes(item.entry), deps.maxBatchBytes);
  return mapLimit(batches, deps.concurrency, (batch) => sendSqsBatch(deps, queueUrl, batch, outcomes));
}

/** Publishes the events `idx` (indexes into `events`) to one queue; sets their `outcomes`. */
export async function publishSqs(
  deps: SqsPublishDeps,
  target: Extract<Target, { kind: "sqs" }>,
  idx: ReadonlyArray<number>,
  events: ReadonlyArray<OutboxEvent>,
  outcomes: PublishOutcome[],
): Promise<void> {
  if (!target.fifo) {
    const items = idx.map((index, n) => ({ index, entry: toEntry(events[index]!, n, false) }));
    await sendChunked(deps, target.queueUrl, items, outcomes);
    return;
  }
  // FIFO: rounds; each round takes the next event of every unblocked group.
  const groups = new Map<string, number[]>();
  for (const index of idx) {
    const g = toFifoId(events[index]!.aggregateId);
    let q = groups.get(g);
    if (!q) {
      q = [];
      groups.set(g, q);
    }
    q.push(index);
  }
  let n = 0;
  while (groups.size > 0) {
    const round = [...groups.values()].map((q) => {
      const index = q[0]!;
      return { index, entry: toEntry(events[index]!, n++, true) };
    });
    await sendChunked(deps, target.queueUrl, round, outcomes);
    for (const [g, q] of groups) {
      const head = q.shift()!;
      // A failure or a rejection blocks the rest of the group: a failed event is retried later,
      // a rejected one is parked by the caller, and no later event of the aggregate overtakes it.
      if (outcomes[head]?.status !== "published") {
        for (const rest of q) outcomes[rest] = behindEarlier();
        q.length = 0;
      }
      if (q.length === 0) groups.delete(g);
    }
  }
}
