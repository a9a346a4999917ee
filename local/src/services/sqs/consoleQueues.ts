/**
 * The Queues view: each queue's counts and oldest message, its messages peeked without a receive
 * (fauxqs' inspection API: nothing is consumed, no receive count moves, in-flight messages show
 * too), and the actions, which are lib/dlq's (`npm run dlq -- redrive`) and SQS's PurgeQueue.
 */
import {
  GetQueueAttributesCommand,
  ListQueuesCommand,
  type Message,
  type MessageAttributeValue,
  PurgeQueueCommand,
} from "@aws-sdk/client-sqs";
import { type DeadLetterFilter, redriveSqsDeadLetters, toSqsDeadLetter } from "reliable-consumers/dlq";
import { bodyView, contextView } from "../../console/bodyView.ts";
import type {
  MoveResultDto,
  PeekedMessageDto,
  QueueDetailDto,
  QueueSummaryDto,
  RedriveRequest,
} from "../../console/consoleApi.ts";
import { ConsoleNotFound } from "../../console/consoleErrors.ts";
import { type ConsoleClients, queueNameOf } from "../../console/consoleSources.ts";
import type { LocalApp } from "../../runtime/model.ts";
import { moveResultOf } from "./moveResult.ts";
import { queueDepth } from "./queueDepth.ts";

interface QueueRef {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  readonly fifo: boolean;
  readonly deadLetterQueueArn?: string;
  readonly maxReceiveCount?: number;
}

/** A message as fauxqs' inspection API returns it (`/_fauxqs/queues/<name>`). */
interface FauxqsMessage {
  readonly messageId: string;
  readonly body: string;
  readonly messageAttributes?: Record<
    string,
    { DataType?: string; StringValue?: string; BinaryValue?: string | { data: number[] } }
  >;
  readonly sentTimestamp: number;
  readonly approximateReceiveCount: number;
  readonly messageGroupId?: string;
}

interface FauxqsQueue {
  readonly messages: {
    readonly ready: FauxqsMessage[];
    readonly delayed: FauxqsMessage[];
    readonly inflight: Array<{ message: FauxqsMessage }>;
  };
}

/** Queues with their redrive settings: the app's, or (under `npm run emulators`) what SQS lists. */
async function queueRefs(app: LocalApp | undefined, clients: ConsoleClients): Promise<QueueRef[]> {
  if (app) return app.queues;
  const listed = await clients.sqs.send(new ListQueuesCommand({ MaxResults: 1000 }));
  return Promise.all(
    (listed.QueueUrls ?? []).map(async (url) => {
      const a = await clients.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn", "RedrivePolicy"] }),
      );
      const redrive = a.Attributes?.RedrivePolicy
        ? (JSON.parse(a.Attributes.RedrivePolicy) as {
            deadLetterTargetArn?: string;
            maxReceiveCount?: unknown;
          })
        : undefined;
      const name = queueNameOf(url);
      return {
        name,
        url,
        arn: a.Attributes?.QueueArn ?? name,
        fifo: name.endsWith(".fifo"),
        ...(redrive?.deadLetterTargetArn ? { deadLetterQueueArn: redrive.deadLetterTargetArn } : {}),
        ...(redrive?.maxReceiveCount !== undefined
          ? { maxReceiveCount: Number(redrive.maxReceiveCount) }
          : {}),
      };
    }),
  );
}

/** Every message of a queue, read by fauxqs without a receive; undefined when SQS is not fauxqs. */
async function inspect(clients: ConsoleClients, name: string): Promise<FauxqsQueue | undefined> {
  if (!clients.sqsEmulatorEndpoint) return undefined;
  try {
    const res = await fetch(`${clients.sqsEmulatorEndpoint}/_fauxqs/queues/${encodeURIComponent(name)}`);
    if (!res.ok) return undefined;
    const q = (await res.json()) as FauxqsQueue;
    return Array.isArray(q?.messages?.ready) ? q : undefined;
  } catch {
    return undefined;
  }
}

/** fauxqs' message in the SDK's shape, so lib/dlq reads it as it reads a received one. */
function asSdkMessage(m: FauxqsMessage): Message {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, a] of Object.entries(m.messageAttributes ?? {})) {
    const binary = a.BinaryValue;
    attributes[name] = {
      DataType: a.DataType ?? "String",
      ...(a.StringValue !== undefined ? { StringValue: a.StringValue } : {}),
      ...(binary !== undefined
        ? {
            BinaryValue:
              typeof binary === "string" ? Buffer.from(binary, "base64") : Uint8Array.from(binary.data),
          }
        : {}),
    };
  }
  return {
    MessageId: m.messageId,
    Body: m.body,
    MessageAttributes: attributes,
    Attributes: {
      SentTimestamp: String(m.sentTimestamp),
      ApproximateReceiveCount: String(m.approximateReceiveCount),
      ...(m.messageGroupId ? { MessageGroupId: m.messageGroupId } : {}),
    },
  };
}

function peeked(m: FauxqsMessage, state: PeekedMessageDto["state"]): PeekedMessageDto {
  const letter = toSqsDeadLetter(asSdkMessage(m));
  return {
    messageId: m.messageId,
    state,
    sentAt: m.sentTimestamp,
    receiveCount: m.approximateReceiveCount,
    ...(m.messageGroupId ? { groupId: m.messageGroupId } : {}),
    body: bodyView(m.body),
    attributes: Object.entries(letter.attributes).map(([name, a]) => ({
      name,
      type: a.DataType,
      value: a.StringValue ?? `(binary, base64) ${a.BinaryValueBase64 ?? ""}`,
    })),
    ...(letter.context ? { context: contextView(letter.context) } : {}),
    errorType: letter.errorType,
  };
}

function allMessages(q: FauxqsQueue): PeekedMessageDto[] {
  return [
    ...q.messages.ready.map((m) => peeked(m, "ready")),
    ...q.messages.inflight.map((e) => peeked(e.message, "inflight")),
    ...q.messages.delayed.map((m) => peeked(m, "delayed")),
  ].sort((a, b) => a.sentAt - b.sentAt);
}

/** The Queues view's data and actions over one app (or the bare emulators). */
export function consoleQueues(app: LocalApp | undefined, clients: ConsoleClients) {
  const triggers = (q: QueueRef) =>
    (app?.mappings ?? []).filter((m) => m.kind === "sqs" && m.queue.arn === q.arn).map((m) => m.functionName);
  const summary = async (q: QueueRef, refs: readonly QueueRef[], now: number): Promise<QueueSummaryDto> => {
    const base = {
      name: q.name,
      url: q.url,
      arn: q.arn,
      fifo: q.fifo,
      ...(q.deadLetterQueueArn ? { deadLetterQueue: queueNameOf(q.deadLetterQueueArn) } : {}),
      ...(q.maxReceiveCount !== undefined ? { maxReceiveCount: q.maxReceiveCount } : {}),
      deadLetterFor: refs.filter((r) => r.deadLetterQueueArn === q.arn).map((r) => r.name),
      triggers: triggers(q),
    };
    const inspected = await inspect(clients, q.name);
    if (inspected) {
      const m = inspected.messages;
      const oldest = Math.min(
        ...[...m.ready, ...m.delayed, ...m.inflight.map((e) => e.message)].map((x) => x.sentTimestamp),
      );
      return {
        ...base,
        visible: m.ready.length,
        inFlight: m.inflight.length,
        delayed: m.delayed.length,
        ...(Number.isFinite(oldest) ? { oldestAgeMs: Math.max(0, now - oldest) } : {}),
      };
    }
    return { ...base, ...(await queueDepth(clients.sqs, q.url)) };
  };
  const find = async (name: string) => {
    const refs = await queueRefs(app, clients);
    const q = refs.find((r) => r.name === name);
    if (!q) throw new ConsoleNotFound(`no queue ${name}`);
    return { q, refs };
  };
  return {
    async summaries(now = Date.now()): Promise<QueueSummaryDto[]> {
      const refs = await queueRefs(app, clients);
      return Promise.all(refs.map((q) => summary(q, refs, now)));
    },
    async detail(name: string, now = Date.now()): Promise<QueueDetailDto> {
      const { q, refs } = await find(name);
      const inspected = await inspect(clients, q.name);
      return {
        queue: await summary(q, refs, now),
        peek: inspected ? "fauxqs" : "unavailable",
        messages: inspected ? allMessages(inspected) : [],
      };
    },
    /** `npm run dlq -- redrive --queue <dlq> [--id …] [--error-type …] [--until …] [--to …] [--dry-run]`. */
    async redrive(request: RedriveRequest, now = Date.now()): Promise<MoveResultDto> {
      const { q, refs } = await find(request.queue);
      const to = request.toQueue ? refs.find((r) => r.name === request.toQueue) : undefined;
      if (request.toQueue && !to) throw new ConsoleNotFound(`no queue ${request.toQueue}`);
      const result = await redriveSqsDeadLetters(clients.sqs, q.url, {
        filter: filterOf(request, now),
        dryRun: request.dryRun,
        ...(to ? { toQueueUrl: to.url } : {}),
      });
      return moveResultOf(request.dryRun, result, queueNameOf);
    },
    async purge(name: string): Promise<{ purged: string }> {
      const { q } = await find(name);
      await clients.sqs.send(new PurgeQueueCommand({ QueueUrl: q.url }));
      return { purged: q.name };
    },
    /** Every message of every queue, peeked (the trace looks for a message's copies in them). */
    async everyMessage(): Promise<
      Array<{ queue: QueueSummaryDto["name"]; isDlq: boolean; message: PeekedMessageDto }>
    > {
      const refs = await queueRefs(app, clients);
      const dlqs = new Set(refs.map((r) => r.deadLetterQueueArn).filter(Boolean));
      const out: Array<{ queue: string; isDlq: boolean; message: PeekedMessageDto }> = [];
      for (const q of refs) {
        const inspected = await inspect(clients, q.name);
        for (const message of inspected ? allMessages(inspected) : [])
          out.push({ queue: q.name, isDlq: dlqs.has(q.arn), message });
      }
      return out;
    },
  };
}

/** A request's filter, as lib/dlq takes it (age → dead-lettered before `now − age`). */
export function filterOf(
  request: { ids?: readonly string[]; errorTypes?: readonly string[]; olderThanSeconds?: number },
  now: number,
): DeadLetterFilter {
  return {
    ...(request.ids?.length ? { ids: request.ids } : {}),
    ...(request.errorTypes?.length ? { errorTypes: request.errorTypes } : {}),
    ...(request.olderThanSeconds !== undefined && request.olderThanSeconds > 0
      ? { until: new Date(now - request.olderThanSeconds * 1000) }
      : {}),
  };
}
