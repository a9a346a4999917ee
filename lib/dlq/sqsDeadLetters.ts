import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListMessageMoveTasksCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
  StartMessageMoveTaskCommand,
} from "@aws-sdk/client-sqs";
import { MESSAGE_ID_HEADER } from "../core/envelope.ts";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import {
  FOLDED_ATTRIBUTE,
  fitAttributes,
  type PlainAttribute,
  packAttributes,
  unpackAttributes,
} from "../sqs/attributePacking.ts";
import { toSdkAttributes } from "../sqs/deadLetter.ts";
import {
  type DeadLetterFilter,
  type DeadLetterSummary,
  errorTypeOf,
  isFiltering,
  type MoveProgress,
  matchesFilter,
  summarise,
} from "./filters.ts";

/** An SQS dead letter with its packed failure context unfolded. */
export interface SqsDeadLetter {
  /** The DLQ message as received, with its receipt handle, attributes and body. */
  readonly message: Message;
  /** The DLQ message's MessageId (what `DeadLetterFilter.ids` selects by). */
  readonly id: string;
  /** The user's own attributes, as they were before parking. */
  readonly attributes: Record<string, PlainAttribute>;
  /** The failure context (`x-last-error`, `x-retry-count`, …); `undefined` if SQS dead-lettered it itself. */
  readonly context: Record<string, string> | undefined;
  /** The type part of `x-last-error`, or `unknown` when there is no context. */
  readonly errorType: string;
  /**
   * Its SentTimestamp, epoch ms: when the consumer parked it (a park sends a new message); a message
   * SQS moved itself keeps the one it had.
   */
  readonly deadLetteredAtMs: number;
  /** `x-original-queue` (a queue ARN) when the consumer parked it; absent after an SQS redrive. */
  readonly originalQueue: string | undefined;
}

function plain(message: Message): Record<string, PlainAttribute> {
  const out: Record<string, PlainAttribute> = {};
  for (const [name, a] of Object.entries(message.MessageAttributes ?? {})) {
    out[name] =
      a.BinaryValue !== undefined
        ? {
            DataType: a.DataType ?? "Binary",
            BinaryValueBase64: Buffer.from(a.BinaryValue).toString("base64"),
          }
        : { DataType: a.DataType ?? "String", StringValue: a.StringValue ?? "" };
  }
  return out;
}

/** Reads an SQS message of a DLQ into a dead letter with its context. */
export function toSqsDeadLetter(message: Message): SqsDeadLetter {
  const { attributes, context } = unpackAttributes(plain(message));
  return {
    message,
    id: message.MessageId ?? "",
    attributes,
    context,
    errorType: errorTypeOf(context?.[CONTEXT_HEADERS.lastError]),
    deadLetteredAtMs: Number(message.Attributes?.SentTimestamp ?? 0),
    originalQueue: context?.[CONTEXT_HEADERS.originalQueue],
  };
}

interface SweepOptions {
  /** How long received messages stay hidden while we work on them. @default 60 s */
  readonly visibilityTimeoutSeconds?: number;
  /** Stop after looking at this many messages. */
  readonly maxMessages?: number;
}

/**
 * Receives every message currently in a queue once: each batch is handed to `onBatch`, which
 * deletes or releases it. The sweep ends at the first empty receive, or when it has seen the queue's
 * approximate depth at the start (SQS receives are sampled; two empty receives in a row end it too).
 */
async function sweep(
  sqs: SQSClient,
  queueUrl: string,
  /** Returns how many of the letters were there before the sweep (default: all of them). */
  onBatch: (letters: SqsDeadLetter[]) => Promise<unknown>,
  options: SweepOptions & { onTotal?: (n: number) => void } = {},
): Promise<void> {
  const attrs = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["ApproximateNumberOfMessages"] }),
  );
  const depth = Number(attrs.Attributes?.ApproximateNumberOfMessages ?? 0);
  options.onTotal?.(depth);
  const max = options.maxMessages ?? Number.POSITIVE_INFINITY;
  let seen = 0;
  let empty = 0;
  while (seen < max && empty < 2) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: Math.min(10, max - seen),
        WaitTimeSeconds: 1,
        VisibilityTimeout: options.visibilityTimeoutSeconds ?? 60,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) {
      if (seen >= depth) break;
      empty++;
      continue;
    }
    empty = 0;
    // Only what was there counts toward the depth: a copy that came back (a redrive into this
    // queue) would end the sweep early, with older letters still unread behind a short receive.
    const counted = await onBatch(messages.map(toSqsDeadLetter));
    seen += typeof counted === "number" ? counted : messages.length;
  }
}

/** Makes messages visible again at once (the ones we looked at but leave in place). */
async function release(sqs: SQSClient, queueUrl: string, messages: Message[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 10) {
    const chunk = messages.slice(i, i + 10);
    if (chunk.length === 0) continue;
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((m, k) => ({
          Id: String(k),
          ReceiptHandle: m.ReceiptHandle!,
          VisibilityTimeout: 0,
        })),
      }),
    );
  }
}

/** What sits in an SQS DLQ, grouped by error type (no bodies). Leaves every message in place. */
export async function inspectSqsDeadLetters(
  sqs: SQSClient,
  queueUrl: string,
  options: { filter?: DeadLetterFilter; maxMessages?: number } = {},
): Promise<DeadLetterSummary> {
  const letters: {
    errorType: string;
    deadLetteredAtMs: number;
    source: string | undefined;
    lastError?: string;
  }[] = [];
  const held: Message[] = [];
  try {
    await sweep(
      sqs,
      queueUrl,
      async (batch) => {
        for (const l of batch) {
          held.push(l.message);
          if (options.filter && !matchesFilter(options.filter, l)) continue;
          const lastError = l.context?.[CONTEXT_HEADERS.lastError];
          letters.push({
            errorType: l.errorType,
            deadLetteredAtMs: l.deadLetteredAtMs,
            source: l.originalQueue,
            ...(lastError !== undefined ? { lastError } : {}),
          });
        }
      },
      { visibilityTimeoutSeconds: 30, ...(options.maxMessages ? { maxMessages: options.maxMessages } : {}) },
    );
  } finally {
    await release(sqs, queueUrl, held);
  }
  return summarise(letters);
}

/** Options of `redriveSqsDeadLetters`. */
export interface RedriveOptions {
  /** Send here instead of each message's `x-original-queue`. Needed for messages SQS dead-lettered itself. */
  readonly toQueueUrl?: string;
  /** Which dead letters to move; the others stay in the DLQ. @default - every one */
  readonly filter?: DeadLetterFilter;
  /** Count what would move and where; move nothing. @default false */
  readonly dryRun?: boolean;
  /**
   * Stop after looking at this many messages (a count).
   * @default - every message the DLQ held at the start
   */
  readonly maxMessages?: number;
  /**
   * Use SQS's own StartMessageMoveTask when it can do the job (a destination is given, no filter,
   * not a dry run) and the endpoint supports it; otherwise receive → send → delete. @default true
   */
  readonly useMoveTask?: boolean;
  /** Called after each received batch with the counts so far. @default - none */
  readonly onProgress?: (p: MoveProgress) => void;
}

/** What a redrive moved, skipped and failed. */
export interface RedriveResult extends MoveProgress {
  /** How the messages moved: SQS's own move task, or receive → send → delete. */
  readonly method: "StartMessageMoveTask" | "receive-send-delete";
  /** Messages left in place for want of a destination: no `toQueueUrl` and no `x-original-queue`. */
  readonly noDestination: number;
  /** Messages moved, per destination queue URL. */
  readonly byDestination: Record<string, number>;
}

/** `arn:aws:sqs:<region>:<account>:<name>` → its queue URL (GetQueueUrl, cached). */
function urlResolver(sqs: SQSClient) {
  const cache = new Map<string, Promise<string>>();
  return (arn: string): Promise<string> => {
    let url = cache.get(arn);
    if (!url) {
      const parts = arn.split(":");
      const name = parts[5];
      if (parts[0] !== "arn" || parts[2] !== "sqs" || !name) {
        return Promise.reject(new Error(`'${arn}' is not an SQS queue ARN`));
      }
      url = sqs
        .send(
          new GetQueueUrlCommand({
            QueueName: name,
            ...(parts[4] ? { QueueOwnerAWSAccountId: parts[4] } : {}),
          }),
        )
        .then((o) => o.QueueUrl ?? Promise.reject(new Error(`no URL for ${arn}`)));
      cache.set(arn, url);
    }
    return url;
  };
}

async function queueArn(sqs: SQSClient, url: string): Promise<string> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }));
  const arn = out.Attributes?.QueueArn;
  if (!arn) throw new Error(`no QueueArn for ${url}`);
  return arn;
}

async function tryMoveTask(
  sqs: SQSClient,
  dlqUrl: string,
  toUrl: string,
  onProgress: RedriveOptions["onProgress"],
): Promise<RedriveResult | undefined> {
  const sourceArn = await queueArn(sqs, dlqUrl);
  const destinationArn = await queueArn(sqs, toUrl);
  try {
    await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: sourceArn, DestinationArn: destinationArn }));
  } catch (error) {
    // Emulators without the API (fauxqs, older LocalStack) answer with an unknown-operation error.
    const name = (error as { name?: string }).name ?? "";
    if (
      /InvalidAction|UnknownOperation|UnsupportedOperation|NotImplemented|InvalidParameterValue/i.test(name)
    ) {
      return undefined;
    }
    if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 400)
      return undefined;
    throw error;
  }
  for (;;) {
    const out = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 1 }));
    const task = out.Results?.[0];
    const moved = Number(task?.ApproximateNumberOfMessagesMoved ?? 0);
    const total = Number(task?.ApproximateNumberOfMessagesToMove ?? moved);
    const p = { total, seen: moved, moved, skipped: 0, failed: 0 };
    onProgress?.(p);
    if (!task || task.Status === "COMPLETED") {
      return { ...p, method: "StartMessageMoveTask", noDestination: 0, byDestination: { [toUrl]: moved } };
    }
    if (task.Status === "FAILED" || task.Status === "CANCELLED") {
      throw new Error(`message move task ${task.Status}: ${task.FailureReason ?? "no reason given"}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * The attributes of a redriven copy: the user's own, the failure context kept (packed as the
 * consumer packed it: `x-failure-context`, or folded with the user's when they use all 10), and
 * `x-message-id` as an attribute of its own unless the user's attributes carry a producer id
 * (`message-id`). The consumer resolves its dedup key from `message-id` ?? `x-message-id`, so a copy
 * of a message that had no business key and no producer id gets the dedup id the original had (its
 * first SQS message id), not the copy's new one: a redrive that sends twice (a delete that failed)
 * or a message that was processed before it was parked does not run its effect again. The attribute
 * is then carried as the user's through later parks and redrives.
 */
export function redrivenAttributes(
  letter: Pick<SqsDeadLetter, "attributes" | "context">,
): Record<string, PlainAttribute> {
  const { attributes, context } = letter;
  // Unfolded, they may be more than SQS's 10 (a message that arrived folded): folded again.
  if (!context) return fitAttributes(attributes);
  const id = context[CONTEXT_HEADERS.messageId];
  const carriesId =
    attributes[MESSAGE_ID_HEADER] !== undefined || attributes[CONTEXT_HEADERS.messageId] !== undefined;
  const own: Record<string, PlainAttribute> =
    id && !carriesId
      ? { ...attributes, [CONTEXT_HEADERS.messageId]: { DataType: "String", StringValue: id } }
      : attributes;
  const packed = packAttributes(own, context);
  // Folded (the user's 10 attributes, or 9 plus the id): the id must stay readable at the top.
  const ownId = own[CONTEXT_HEADERS.messageId];
  if (packed[FOLDED_ATTRIBUTE] && ownId) packed[CONTEXT_HEADERS.messageId] = ownId;
  return packed;
}

/**
 * Sends copies of `letters` to `destination` (one SendMessageBatch) and deletes from the DLQ only
 * those SQS confirmed; returns how many moved.
 */
async function moveLetters(
  sqs: SQSClient,
  dlqUrl: string,
  destination: string,
  letters: ReadonlyArray<SqsDeadLetter>,
  copies?: Set<string>,
): Promise<number> {
  const fifo = destination.endsWith(".fifo");
  const entries: SendMessageBatchRequestEntry[] = letters.map((l, k) => {
    const attributes = redrivenAttributes(l);
    const group = l.message.Attributes?.MessageGroupId;
    return {
      Id: String(k),
      MessageBody: l.message.Body ?? "",
      ...(Object.keys(attributes).length > 0 ? { MessageAttributes: toSdkAttributes(attributes) } : {}),
      ...(fifo
        ? { MessageGroupId: group ?? "redrive", MessageDeduplicationId: l.message.MessageId }
        : // A fair queue's letter goes back in its tenant.
          group !== undefined
          ? { MessageGroupId: group }
          : {}),
    };
  });
  const sent = await sqs
    .send(new SendMessageBatchCommand({ QueueUrl: destination, Entries: entries }))
    .catch(() => ({ Successful: [] as { Id?: string; MessageId?: string }[] }));
  const ok = new Set((sent.Successful ?? []).map((s) => s.Id));
  for (const s of sent.Successful ?? []) if (s.MessageId) copies?.add(s.MessageId);
  const confirmed = letters.filter((_, k) => ok.has(String(k)));
  if (confirmed.length > 0) {
    // Delete only what SQS confirmed; a delete that fails leaves a duplicate, never a loss.
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: dlqUrl,
        Entries: confirmed.map((l, k) => ({ Id: String(k), ReceiptHandle: l.message.ReceiptHandle! })),
      }),
    );
  }
  return confirmed.length;
}

/** SQS's own move task, where it applies (a whole DLQ to one queue) and the endpoint has it. */
async function moveTaskFirst(
  sqs: SQSClient,
  dlqUrl: string,
  options: RedriveOptions,
): Promise<RedriveResult | undefined> {
  const whole = !options.dryRun && !isFiltering(options.filter ?? {});
  if (options.useMoveTask === false || !options.toQueueUrl || !whole) return undefined;
  return tryMoveTask(sqs, dlqUrl, options.toQueueUrl, options.onProgress);
}

/**
 * Moves messages from an SQS DLQ back to their source queue (`redrive --queue <dlq>`), with nothing
 * lost: a message is deleted from the DLQ only after SQS confirmed the send of its copy (per entry of
 * SendMessageBatch); a failed send leaves it in the DLQ, visible again after the timeout. The user's
 * own attributes are restored and the failure context kept, with `x-message-id` readable by the
 * consumer (`redrivenAttributes`). FIFO destinations get the message's group and its DLQ message id
 * as deduplication id, so a send retried after a crash is not doubled. Only what the DLQ held
 * when the redrive began moves: a copy parked again meanwhile (SentTimestamp from then on; a clock
 * of ours behind SQS's leaves such a message for the next run, never loses it) stays where it is.
 */
export async function redriveSqsDeadLetters(
  sqs: SQSClient,
  dlqUrl: string,
  options: RedriveOptions = {},
): Promise<RedriveResult> {
  const viaTask = await moveTaskFirst(sqs, dlqUrl, options);
  if (viaTask) return viaTask;
  const resolve = urlResolver(sqs);
  const startedAt = Date.now();
  const progress = { total: 0, seen: 0, moved: 0, skipped: 0, failed: 0 };
  let noDestination = 0;
  const byDestination: Record<string, number> = {};
  const leaveInPlace: Message[] = [];
  /** The MessageIds of the copies this redrive sent: one that comes back is not moved again. */
  const copies = new Set<string>();

  try {
    await sweep(
      sqs,
      dlqUrl,
      async (batch) => {
        const perDestination = new Map<string, SqsDeadLetter[]>();
        let before = 0;
        for (const l of batch) {
          // A copy of ours, or parked again since we began (a poison message): held, not chased
          // round the loop. Ids first: SentTimestamp is the service's clock, not ours. Strictly
          // later: a letter whose send returned before we began can carry the very millisecond
          // we began in (a local endpoint answers within it), and it was there.
          if (copies.has(l.id) || l.deadLetteredAtMs > startedAt) {
            leaveInPlace.push(l.message);
            continue;
          }
          before++;
          progress.seen++;
          if (options.filter && !matchesFilter(options.filter, l)) {
            progress.skipped++;
            leaveInPlace.push(l.message);
            continue;
          }
          let destination = options.toQueueUrl;
          if (!destination && l.originalQueue) {
            destination = await resolve(l.originalQueue).catch(() => undefined);
          }
          if (!destination) {
            noDestination++;
            progress.skipped++;
            leaveInPlace.push(l.message);
            continue;
          }
          const list = perDestination.get(destination) ?? [];
          list.push(l);
          perDestination.set(destination, list);
        }
        for (const [destination, letters] of perDestination) {
          if (options.dryRun) {
            leaveInPlace.push(...letters.map((l) => l.message));
            progress.moved += letters.length;
            byDestination[destination] = (byDestination[destination] ?? 0) + letters.length;
            continue;
          }
          const confirmed = await moveLetters(sqs, dlqUrl, destination, letters, copies);
          progress.failed += letters.length - confirmed;
          progress.moved += confirmed;
          byDestination[destination] = (byDestination[destination] ?? 0) + confirmed;
        }
        options.onProgress?.({ ...progress });
        return before;
      },
      {
        ...(options.maxMessages ? { maxMessages: options.maxMessages } : {}),
        onTotal: (n) => {
          progress.total = n;
        },
      },
    );
  } finally {
    await release(sqs, dlqUrl, leaveInPlace);
  }
  return { ...progress, method: "receive-send-delete", noDestination, byDestination };
}
