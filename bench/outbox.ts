/**
 * Outbox benchmark: the unit of work (inbox marker + order item + outbox event in one transaction)
 * and the relay, fed real DynamoDB Streams batches of 100, publishing to SQS (standard and FIFO)
 * and to Kafka. Reports events per second and API calls per event. The floor for SQS is 0.1
 * SendMessageBatch calls per event (10 messages a call); clearing the pending markers adds 0.04
 * BatchWriteItem calls per event (25 items a call).
 *
 * `runOutboxBench()` expects the emulators' AWS_* / KAFKA_BROKERS variables in process.env
 * (bench/index.ts starts them). Standalone: `npx tsx bench/outbox.ts`.
 */
import { randomBytes } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import { CreateQueueCommand, DeleteQueueCommand } from "@aws-sdk/client-sqs";
import type { DynamoDBStreamEvent } from "aws-lambda";
import { disconnectAllKafkaProducers, getKafkaProducer, kafkaConfigFromEnv } from "reliable-consumers/kafka";
import {
  createInboxOutbox,
  createOutboxPublisher,
  createOutboxRelay,
  createStreamPoller,
  OUTBOX_STREAM_FILTER_PATTERN,
} from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { createAppTable, deleteTable, startDynamoDbLocal } from "reliable-consumers/testing";
import { createDeclaredTopicsOn } from "../lib/local/kafkaTopics.ts";
import { countDynamoDb } from "./ddbCounter.ts";

const EVENTS = Number(process.env.OUTBOX_BENCH_EVENTS ?? 2000);
const AGGREGATES = 400;
const WRITE_CONCURRENCY = 16;

type Kind = "sqs" | "sqsFifo" | "kafka";
/** OUTBOX_BENCH_SCENARIOS=kafka (comma-separated) runs some of them, e.g. for a profile. @default all three */
const KINDS = (process.env.OUTBOX_BENCH_SCENARIOS ?? "sqs,sqsFifo,kafka")
  .split(",")
  .map((k) => k.trim()) as Kind[];

interface ScenarioResult {
  events: number;
  batches: number;
  eventsPerSec: number;
  apiCallsPerEvent: { total: number; sqsSendMessageBatch: number; kafkaSend: number; dynamodb: number };
  unitOfWork: { messagesPerSec: number; ddbRequestsPerMessage: number; actionsPerTransaction: number };
}

/**
 * Each scenario on a DynamoDB Local of its own, stopped afterwards (as chaos/scenarios.ts
 * withOwnDynamoDb does): DynamoDB Local slows down with what it has held, deleted tables or not, so
 * on one shared instance the unit-of-work rate fell from 343 to 80 to 35 messages/s from the first
 * scenario to the third, and whichever ran last looked slowest.
 */
async function onOwnDynamoDb<T>(run: (endpoint: string) => Promise<T>): Promise<T> {
  const ddb = await startDynamoDbLocal();
  try {
    return await run(ddb.endpoint);
  } finally {
    await ddb.stop();
  }
}

async function scenario(kind: Kind, run: string, endpoint: string): Promise<ScenarioResult> {
  const writerClient = new DynamoDBClient({ endpoint });
  const relayClient = new DynamoDBClient({ endpoint });
  const sqs = createSqsClient();
  const table = `bench-outbox-${kind}-${run}`;
  const streamArn = await createAppTable(writerClient, table);
  let queueUrl: string | undefined;
  let destination: string;
  if (kind === "kafka") {
    destination = `kafka:bench-outbox-${run}`;
    // A real cluster auto-creates nothing: the topic as a stack would declare it (the mock: on first use).
    await createDeclaredTopicsOn(kafkaConfigFromEnv().brokers, [
      { name: `bench-outbox-${run}`, partitions: 4 },
    ]);
    await getKafkaProducer().send(`bench-outbox-${run}`, [{ key: "warm", value: "warm" }]); // connection
  } else {
    const fifo = kind === "sqsFifo";
    queueUrl = (
      await sqs.send(
        new CreateQueueCommand({
          QueueName: `bench-outbox-${run}${fifo ? ".fifo" : ""}`,
          Attributes: fifo ? { FifoQueue: "true" } : {},
        }),
      )
    ).QueueUrl!;
    destination = `sqs:${queueUrl}`;
  }
  try {
    // 1. The unit of work: one transaction per message (marker + order + event).
    const writes = countDynamoDb(writerClient);
    const uow = createInboxOutbox({
      tableName: table,
      scope: "bench",
      client: writerClient,
      defaultDestination: destination,
    });
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: WRITE_CONCURRENCY }, async () => {
        while (next < EVENTS) {
          const i = next++;
          const orderId = `o-${i}`;
          const body = { orderId, customerId: `c-${i % 97}`, amountCents: 1000 + i };
          await uow.run(
            {
              id: orderId,
              idSource: "business",
              key: undefined,
              body,
              raw: JSON.stringify(body),
              headers: {},
              attempt: 1,
              source: {
                kind: "sqs",
                queueArn: "arn:aws:sqs:us-east-1:000000000000:orders",
                messageId: `m-${i}`,
              },
            },
            (tx) => {
              tx.put({ Item: { pk: `ORDER#${orderId}`, sk: "ORDER", ...body } });
              tx.publish({
                aggregateType: "customer",
                aggregateId: `c-${i % AGGREGATES}`,
                eventType: "OrderPlaced",
                payload: body,
              });
            },
          );
        }
      }),
    );
    const writeMs = performance.now() - t0;

    // 2. Collect the stream as Lambda would deliver it (batches of 100, filtered), not timed.
    const batches: DynamoDBStreamEvent[] = [];
    await createStreamPoller({
      client: new DynamoDBStreamsClient({ endpoint }),
      streamArn,
      batchSize: 100,
      filterPattern: OUTBOX_STREAM_FILTER_PATTERN,
      handler: async (event) => {
        batches.push(event);
        return { batchItemFailures: [] };
      },
    }).drain();
    const delivered = batches.reduce((n, b) => n + b.Records.length, 0);
    if (delivered !== EVENTS) throw new Error(`stream delivered ${delivered} of ${EVENTS} events`);

    // 3. The relay, one batch after another (one shard, as Lambda runs it), timed.
    const relaySqs = createSqsClient();
    let sqsCalls = 0;
    relaySqs.middlewareStack.add(
      (nextHandler, context) => async (args) => {
        if (context.commandName === "SendMessageBatchCommand") sqsCalls++;
        return nextHandler(args);
      },
      { step: "initialize", name: "benchCountSqs" },
    );
    const relayDdb = countDynamoDb(relayClient);
    const publisher = createOutboxPublisher({ sqs: relaySqs });
    const relay = createOutboxRelay({ tableName: table, client: relayClient, publisher });
    const t1 = performance.now();
    for (const batch of batches) {
      const response = await relay.handler(batch);
      if (response.batchItemFailures.length > 0) throw new Error(`relay failed a batch (${kind})`);
    }
    const relayMs = performance.now() - t1;
    const calls = {
      sqsSendMessageBatch: sqsCalls / EVENTS,
      kafkaSend: publisher.calls.kafkaSend / EVENTS,
      dynamodb: relayDdb.requests / EVENTS,
    };
    const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
    return {
      events: EVENTS,
      batches: batches.length,
      eventsPerSec: Math.round(EVENTS / (relayMs / 1000)),
      apiCallsPerEvent: {
        total: round(calls.sqsSendMessageBatch + calls.kafkaSend + calls.dynamodb),
        sqsSendMessageBatch: round(calls.sqsSendMessageBatch),
        kafkaSend: round(calls.kafkaSend),
        dynamodb: round(calls.dynamodb),
      },
      unitOfWork: {
        messagesPerSec: Math.round(EVENTS / (writeMs / 1000)),
        ddbRequestsPerMessage: round(writes.requests / EVENTS),
        actionsPerTransaction: 3,
      },
    };
  } finally {
    await deleteTable(writerClient, table);
    if (queueUrl) await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => {});
  }
}

/** Every destination, or some (`["kafka"]`: npm run bench runs the Kafka one once per Kafka substrate). */
export async function runOutboxBench(
  kinds: readonly Kind[] = ["sqs", "sqsFifo", "kafka"],
): Promise<Record<string, unknown>> {
  const run = randomBytes(3).toString("hex");
  try {
    const results: Record<string, unknown> = {
      workload: `${EVENTS} events (unit of work: marker + order + event per message, ${WRITE_CONCURRENCY} in flight), relayed from DynamoDB Streams batches of 100 over ${AGGREGATES} aggregates`,
    };
    // One after another, each on a DynamoDB Local of its own (a tiring shared one skewed the later ones).
    for (const kind of kinds.filter((k) => KINDS.includes(k)))
      results[kind] = await onOwnDynamoDb((endpoint) => scenario(kind, run, endpoint));
    return results;
  } finally {
    await disconnectAllKafkaProducers();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { startEmulators } = await import("../lib/local/emulators.ts");
  const emulators = await startEmulators();
  process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
  try {
    console.log(JSON.stringify(await runOutboxBench(), null, 2));
  } finally {
    await emulators.stop();
  }
}
