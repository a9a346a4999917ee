/**
 * Ceiling probes: what each substrate does alone, in the shape and at the concurrency a workload
 * uses it, measured in the same run as the workload (the substrates' speed moves ±30 % between
 * runs and with DynamoDB Local's warm-up, so a figure is only read against its own run's ceiling).
 *
 * - DynamoDB Local, ours: conditional PartiQL writes in BatchExecuteStatement calls of 25, the
 *   claim (`INSERT`) then the fenced completion (`UPDATE … WHERE token = ?`) of each key, with as
 *   many requests in flight as the consumer has (a batch of 100 → 4).
 * - DynamoDB Local, Powertools': a conditional PutItem then an UpdateItem per key, the whole batch
 *   in flight (its `processInParallel` runs the whole batch at once; the SDK's agent queues what
 *   its 50 sockets cannot carry, as it does for Powertools).
 * - DynamoDB Local, ours in the shape of its Lambda batches (`batchShapedCeiling`): the bound of
 *   the batch model itself, to say how much of ours' rest is the model's and how much its own.
 * - DynamoDB Local, the relay's clears: BatchWriteItem puts of 25, 4 in flight (a batch of 100).
 * - fauxqs: SendMessageBatch of 10 messages with the relay's attributes, 10 in flight.
 * - the Kafka broker: kafkajs alone, one `sendBatch` of 100 messages at a time (the relay's shape),
 *   acks = all, idempotent where the cluster supports it.
 *
 * A workload's `ceilingFraction` is its rate over the rate the ceiling allows it: for idempotent
 * SQS, its write units per second over the probe's writes per second (msgs/s ÷ (writes/s ÷ writes
 * per message)); for the relay, events/s over the serial bound of its publish and its clear.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  BatchExecuteStatementCommand,
  BatchGetItemCommand,
  BatchWriteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { Kafka, logLevel } from "kafkajs";
import { kafkaConfigFromEnv } from "reliable-consumers/kafka";
import { toKafkaJsConfig } from "../lib/kafka/config.ts";

/** Units of work per second, and how many were done in how long. */
export interface CeilingFigure {
  readonly perSec: number;
  readonly units: number;
  readonly ms: number;
}

const figure = (units: number, ms: number): CeilingFigure => ({
  perSec: Math.round(units / (ms / 1000)),
  units,
  ms: Math.round(ms),
});

async function workers(n: number, next: () => Promise<boolean>): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (await next());
    }),
  );
}

/** Claims as ours writes them: a conditional PartiQL INSERT per key, with a 30 s lease. */
const claims = (table: string, ids: ReadonlyArray<string>) =>
  new BatchExecuteStatementCommand({
    Statements: ids.map((id) => ({
      Statement: `INSERT INTO "${table}" VALUE {'pk': ?, 'status': 'IN_PROGRESS', 'leaseToken': ?, 'leaseExpiresAt': ?, 'expiresAt': ?, 'attempts': 1}`,
      Parameters: [{ S: id }, { S: id }, { N: String(Date.now() + 30_000) }, { N: "9999999999" }],
    })),
  });

/** Completions as ours writes them: an UPDATE per key, fenced by the claim's token (here, the key). */
const completions = (table: string, ids: ReadonlyArray<string>) =>
  new BatchExecuteStatementCommand({
    Statements: ids.map((id) => ({
      Statement: `UPDATE "${table}" SET "status" = 'COMPLETED' SET "expiresAt" = ? REMOVE "leaseExpiresAt" WHERE "pk" = ? AND "leaseToken" = ?`,
      Parameters: [{ N: "9999999999" }, { S: id }, { S: id }],
    })),
  });

/** Our dedup writes: a claim INSERT and a fenced completion UPDATE per key, in statements of 25. */
export async function partiqlWriteCeiling(
  client: DynamoDBClient,
  table: string,
  keys: number,
  inFlight: number,
): Promise<CeilingFigure> {
  const tag = randomBytes(4).toString("hex");
  const groups = Math.ceil(keys / 25);
  let next = 0;
  const t0 = performance.now();
  await workers(inFlight, async () => {
    const g = next++;
    if (g >= groups) return false;
    const ids = Array.from({ length: 25 }, (_, j) => `ceiling-${tag}-${g * 25 + j}`);
    await client.send(claims(table, ids));
    await client.send(completions(table, ids));
    return true;
  });
  return figure(groups * 50, performance.now() - t0);
}

/** Powertools' writes: a conditional PutItem then an UpdateItem per key, `inFlight` keys at once. */
export async function putItemWriteCeiling(
  client: DynamoDBClient,
  table: string,
  keys: number,
  inFlight: number,
): Promise<CeilingFigure> {
  const tag = randomBytes(4).toString("hex");
  let next = 0;
  const t0 = performance.now();
  await workers(inFlight, async () => {
    const i = next++;
    if (i >= keys) return false;
    const id = `ceiling-${tag}-${i}`;
    await client.send(
      new PutItemCommand({
        TableName: table,
        Item: { id: { S: id }, status: { S: "INPROGRESS" }, expiration: { N: "9999999999" } },
        ConditionExpression: "attribute_not_exists(id)",
      }),
    );
    await client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { id: { S: id } },
        UpdateExpression: "SET #s = :c",
        ExpressionAttributeNames: { "#s": "status" },
        ExpressionAttributeValues: { ":c": { S: "COMPLETED" } },
      }),
    );
    return true;
  });
  return figure(keys * 2, performance.now() - t0);
}

/** The relay's clears: BatchWriteItem puts of 25 items shaped like outbox events, `inFlight` at once. */
export async function batchPutCeiling(
  client: DynamoDBClient,
  table: string,
  items: number,
  inFlight: number,
): Promise<CeilingFigure> {
  const tag = randomBytes(4).toString("hex");
  const groups = Math.ceil(items / 25);
  let next = 0;
  const t0 = performance.now();
  await workers(inFlight, async () => {
    const g = next++;
    if (g >= groups) return false;
    const requests = Array.from({ length: 25 }, (_, j) => ({
      PutRequest: {
        Item: {
          pk: { S: `OUTBOX#ceiling#${tag}-${(g * 25 + j) % 400}` },
          sk: { S: `EVENT#${tag}-${g * 25 + j}` },
          payload: {
            S: JSON.stringify({ orderId: `o-${g * 25 + j}`, customerId: "c-1", amountCents: 1000 }),
          },
          publishedAt: { N: String(Date.now()) },
        },
      },
    }));
    let todo = requests;
    while (todo.length > 0) {
      const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: todo } }));
      todo = (out.UnprocessedItems?.[table] ?? []) as typeof requests;
    }
    return true;
  });
  return figure(groups * 25, performance.now() - t0);
}

/** The relay's SQS sends: SendMessageBatch of 10 messages with its attributes, `inFlight` calls at once. */
export async function sendMessageBatchCeiling(
  sqs: SQSClient,
  queueUrl: string,
  messages: number,
  inFlight: number,
): Promise<CeilingFigure> {
  const fifo = queueUrl.endsWith(".fifo");
  const tag = randomBytes(4).toString("hex");
  const calls = Math.ceil(messages / 10);
  let next = 0;
  const attribute = (v: string) => ({ DataType: "String", StringValue: v });
  const t0 = performance.now();
  await workers(inFlight, async () => {
    const c = next++;
    if (c >= calls) return false;
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Array.from({ length: 10 }, (_, j) => {
          const id = `${tag}-${c * 10 + j}`;
          return {
            Id: `m${j}`,
            MessageBody: JSON.stringify({ orderId: `o-${id}`, customerId: "c-1", amountCents: 1000 }),
            MessageAttributes: {
              "message-id": attribute(id),
              "event-type": attribute("OrderPlaced"),
              "aggregate-type": attribute("customer"),
              "aggregate-id": attribute(`c-${j}`),
              traceparent: attribute(`00-${"1".repeat(32)}-${"2".repeat(16)}-01`),
              "schema-version": attribute("1"),
              "content-type": attribute("application/json"),
              "created-at": attribute(new Date().toISOString()),
            },
            ...(fifo ? { MessageGroupId: `g-${c}-${j}`, MessageDeduplicationId: id } : {}),
          };
        }),
      }),
    );
    return true;
  });
  return figure(calls * 10, performance.now() - t0);
}

/** kafkajs producing alone: one sendBatch of `batch` messages at a time, acks = all. */
export async function kafkaProduceCeiling(
  topic: string,
  messages: number,
  batch = 100,
): Promise<CeilingFigure> {
  const config = kafkaConfigFromEnv();
  const idempotent = config.idempotent ?? true;
  const kafka = new Kafka({ ...toKafkaJsConfig(config), logLevel: logLevel.NOTHING });
  const producer = kafka.producer({
    idempotent,
    maxInFlightRequests: idempotent ? 5 : 1,
    allowAutoTopicCreation: true,
  });
  await producer.connect();
  try {
    const tag = randomBytes(4).toString("hex");
    const message = (i: number) => ({
      key: `c-${i % 400}`,
      value: JSON.stringify({ orderId: `o-${tag}-${i}`, customerId: "c-1", amountCents: 1000 }),
      headers: {
        "message-id": `${tag}-${i}`,
        "event-type": "OrderPlaced",
        "aggregate-type": "customer",
        "aggregate-id": `c-${i % 400}`,
        traceparent: `00-${"1".repeat(32)}-${"2".repeat(16)}-01`,
        "schema-version": "1",
        "content-type": "application/json",
        "created-at": new Date().toISOString(),
      },
    });
    await producer.send({ topic, acks: -1, messages: [message(-1)] }); // connection and metadata
    const t0 = performance.now();
    for (let i = 0; i < messages; i += batch) {
      await producer.sendBatch({
        acks: -1,
        topicMessages: [
          {
            topic,
            messages: Array.from({ length: Math.min(batch, messages - i) }, (_, j) => message(i + j)),
          },
        ],
      });
    }
    return figure(messages, performance.now() - t0);
  } finally {
    await producer.disconnect();
  }
}

/** `rate` as a fraction of `ceiling` (3 decimals). */
export const fractionOf = (rate: number, ceiling: number): number =>
  ceiling > 0 ? Math.round((rate / ceiling) * 1000) / 1000 : 0;

/** The rate two stages in series allow, each unit passing through both (1 / Σ 1/rate). */
export const serialCeiling = (...perSec: number[]): number =>
  Math.round(1 / perSec.reduce((a, r) => a + 1 / r, 0));

/**
 * Our dedup writes in the shape of a Lambda batch, with no consumer around them: per batch, the
 * claims of its new keys (INSERTs of 25) and one consistent read of its known keys all at once,
 * each claim group's completions `handlerMs` after its claims come back (the handler's work), and
 * the next batch only once the last completion is in (Lambda waits for the answer), with
 * `invocations` batches in flight at once. The bound any consumer meets that claims before and
 * completes after its effects.
 */
export async function batchShapedCeiling(
  client: DynamoDBClient,
  table: string,
  batches: ReadonlyArray<{ readonly newKeys: number; readonly knownKeys: number }>,
  handlerMs: number,
  invocations = 1,
): Promise<CeilingFigure> {
  const tag = randomBytes(4).toString("hex");
  const idOf = (n: number) => `shaped-${tag}-${n}`;
  let written = 0;
  let keyNo = 0;
  let next = 0;
  const t0 = performance.now();
  await workers(invocations, async () => {
    const batch = batches[next++];
    if (!batch) return false;
    const first = keyNo;
    keyNo += batch.newKeys;
    const ids = Array.from({ length: batch.newKeys }, (_, j) => idOf(first + j));
    const groups = Array.from({ length: Math.ceil(ids.length / 25) }, (_, g) =>
      ids.slice(g * 25, g * 25 + 25),
    );
    const known = Math.min(batch.knownKeys, first);
    await Promise.all([
      known > 0 &&
        client.send(
          new BatchGetItemCommand({
            RequestItems: {
              [table]: {
                Keys: Array.from({ length: known }, (_, j) => ({ pk: { S: idOf(first - 1 - j) } })),
                ConsistentRead: true,
              },
            },
          }),
        ),
      ...groups.map(async (group) => {
        await client.send(claims(table, group));
        await sleep(handlerMs);
        await client.send(completions(table, group));
        written += group.length * 2;
      }),
    ]);
    return true;
  });
  return figure(written, performance.now() - t0);
}
