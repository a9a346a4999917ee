import { type AttributeValue, type DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { Envelope } from "reliable-consumers";
import { createStreamPoller } from "reliable-consumers-local";
import { OUTBOX_HEAD_SK, OUTBOX_STREAM_FILTER_PATTERN } from "../../lib/outbox/schema.ts";
import type { StreamPollerOptions } from "../../local/src/services/dynamodb/streamPoller.ts";
import { dynamodbStreams } from "./clients.ts";

/** An envelope as the SQS adapter would build it, for driving the unit of work directly. */
export function envelopeOf<T>(id: string, body: T, headers: Record<string, string> = {}): Envelope<T> {
  return {
    id,
    idSource: "business",
    key: undefined,
    body,
    raw: JSON.stringify(body),
    headers,
    attempt: 1,
    source: { kind: "sqs", queueArn: "arn:aws:sqs:us-east-1:000000000000:test", messageId: `sqs-${id}` },
  };
}

/** Lambda's stream trigger on the real stream, with the relay's filter. */
export function streamTrigger(
  streamArn: string,
  handler: StreamPollerOptions["handler"],
  options: Partial<StreamPollerOptions> = {},
) {
  return createStreamPoller({
    client: dynamodbStreams(),
    streamArn,
    handler,
    filterPattern: OUTBOX_STREAM_FILTER_PATTERN,
    ...options,
  });
}

export async function scanAll(
  client: DynamoDBClient,
  table: string,
): Promise<Record<string, AttributeValue>[]> {
  const items: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const out = await client.send(
      new ScanCommand({ TableName: table, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * The items whose partition key starts with `prefix`; of an outbox partition, the events only (its
 * aggregate head, sort key `HEAD`, is not an event; `headsOf` reads those).
 */
export const byPrefix = (items: Record<string, AttributeValue>[], prefix: string) =>
  items.filter((i) => i.pk?.S?.startsWith(prefix) && i.sk?.S !== OUTBOX_HEAD_SK);

/** The aggregate heads among `items` whose partition key starts with `prefix`. */
export const headsOf = (items: Record<string, AttributeValue>[], prefix: string) =>
  items.filter((i) => i.pk?.S?.startsWith(prefix) && i.sk?.S === OUTBOX_HEAD_SK);

export async function createQueue(sqs: SQSClient, name: string): Promise<string> {
  const fifo = name.endsWith(".fifo");
  const out = await sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: fifo ? { FifoQueue: "true" } : {} }),
  );
  return out.QueueUrl!;
}

/**
 * Receives and deletes until an empty poll, in receive order (FIFO: fauxqs gives one message per
 * group per receive, and the next one of a group only after the previous is deleted).
 */
export async function receiveAll(sqs: SQSClient, url: string): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    if (!out.Messages?.length) return all;
    all.push(...out.Messages);
    for (const m of out.Messages)
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
  }
}

/** Per-key sequence of first occurrences (duplicates removed by id). */
export function firstOccurrences<T>(
  items: T[],
  id: (t: T) => string,
  key: (t: T) => string,
): Map<string, T[]> {
  const seen = new Set<string>();
  const out = new Map<string, T[]>();
  for (const item of items) {
    if (seen.has(id(item))) continue;
    seen.add(id(item));
    const list = out.get(key(item)) ?? [];
    list.push(item);
    out.set(key(item), list);
  }
  return out;
}
