import { type AttributeValue, type DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { type Message, ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Kafka, KafkaMessage } from "kafkajs";

/**
 * Readers of what the system STORED (tables, queues, topics). The invariants are checked on these
 * only, never on logs or on counters kept by the code under test.
 */

export async function scanTable(
  client: DynamoDBClient,
  table: string,
): Promise<Record<string, AttributeValue>[]> {
  const items: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const out = await client.send(
      new ScanCommand({
        TableName: table,
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * Every message in a queue, read without deleting: each is received once and hidden for
 * `hideSeconds`, long enough to read the whole queue. (Run it once per queue, at the end.)
 */
export async function readQueue(sqs: SQSClient, queueUrl: string, hideSeconds = 300): Promise<Message[]> {
  const all: Message[] = [];
  let empty = 0;
  while (empty < 2) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: hideSeconds,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    if (!out.Messages?.length) {
      empty++;
      continue;
    }
    empty = 0;
    all.push(...out.Messages);
  }
  return all;
}

export interface TopicRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string | undefined;
  readonly value: string | undefined;
  readonly headers: Record<string, string>;
  readonly timestamp: number;
}

function decodeHeaders(h: KafkaMessage["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) {
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined) out[k] = first.toString();
  }
  return out;
}

/**
 * Every record of a topic, up to the high watermarks at call time, in partition + offset order.
 * Uses a throw-away consumer group; the topic is created (empty) if it does not exist.
 */
export async function readTopic(kafka: Kafka, topic: string, timeoutMs = 60_000): Promise<TopicRecord[]> {
  const admin = kafka.admin();
  await admin.connect();
  let ends: Array<{ partition: number; high: string; low: string }> = [];
  try {
    // Right after a broker returns (or a leader moves), a partition can briefly have no leader or a
    // stale one: retriable errors are waited out, for up to 30 s.
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.fetchTopicMetadata({ topics: [topic] });
        ends = await admin.fetchTopicOffsets(topic);
        break;
      } catch (error) {
        if (!(error as { retriable?: boolean }).retriable || attempt >= 30) throw error;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  } finally {
    await admin.disconnect();
  }
  const want = new Map(
    ends.filter((e) => BigInt(e.high) > BigInt(e.low)).map((e) => [e.partition, BigInt(e.high)]),
  );
  const records: TopicRecord[] = [];
  if (want.size === 0) return records;
  const consumer = kafka.consumer({
    groupId: `chaos-reader-${topic}-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    sessionTimeout: 6_000,
    rebalanceTimeout: 1_000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const reached = new Set<number>();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${topic}: read ${records.length} records, partitions not reached in time`)),
        timeoutMs,
      );
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            const high = want.get(partition);
            if (high === undefined || BigInt(message.offset) >= high) return;
            records.push({
              topic,
              partition,
              offset: message.offset,
              key: message.key?.toString(),
              value: message.value?.toString(),
              headers: decodeHeaders(message.headers),
              timestamp: Number(message.timestamp),
            });
            if (BigInt(message.offset) + 1n >= high) reached.add(partition);
            if (reached.size === want.size) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return records.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
}
