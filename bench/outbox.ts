/**
 * Outbox benchmark: the unit of work (inbox marker + order item + outbox event in one transaction)
 * and the relay, fed real DynamoDB Streams batches of 100, publishing to SQS (standard and FIFO)
 * and to Kafka. Reports events per second, API calls, read and write units per event, the order
 * audit (aggregates with an event published before its predecessor: must be 0) and the fraction of
 * the substrates' ceiling (bench/ceilings.ts) the relay reaches.
 *
 * Variants, side by side, each on a DynamoDB Local of its own:
 * - `unnumbered` (`aggregateSequence: false`, the relay before issue 24): a Query per aggregate per batch;
 * - `numbered` (the defaults): events numbered per aggregate, the relay's cache of what it
 *   published, reads only where the order is in doubt, and a Query before an aggregate's first
 *   event (the table may hold unnumbered ones: `unnumberedEvents` true);
 * - `fresh` (numbered, `unnumberedEvents: false`, as the reference stack): a first event reads nothing;
 * - `cold` (fresh, `aggregateCache: false`): a BatchGetItem of each aggregate's predecessor per
 *   batch, the read a cold container makes (the Query-vs-BatchGetItem measurement of issue 24 item 2).
 *
 * `runOutboxBench()` expects the emulators' AWS_* / KAFKA_BROKERS variables in process.env
 * (bench/index.ts starts them). Standalone: `npx tsx bench/outbox.ts`.
 */
import { randomBytes } from "node:crypto";
import { type AttributeValue, DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  type SendMessageBatchCommandInput,
} from "@aws-sdk/client-sqs";
import type { DynamoDBStreamEvent } from "aws-lambda";
import {
  disconnectAllKafkaProducers,
  getKafkaProducer,
  type KafkaHeader,
  type KafkaProducer,
  kafkaConfigFromEnv,
} from "reliable-consumers/kafka";
import { createInboxOutbox, createOutboxRelay } from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { createStreamPoller } from "reliable-consumers-local";
import { createOutboxPublisher } from "../lib/outbox/publisher.ts";
import { OUTBOX_ATTR, OUTBOX_STREAM_FILTER_PATTERN } from "../lib/outbox/schema.ts";
import { createAppTable } from "../local/src/services/dynamodb/appTable.ts";
import { deleteTable } from "../local/src/services/dynamodb/dedupTable.ts";
import { startDynamoDbLocal } from "../local/src/services/dynamodb/emulator.ts";
import { createDeclaredTopicsOn } from "../local/src/services/kafka/topics.ts";
import {
  batchPutCeiling,
  fractionOf,
  kafkaProduceCeiling,
  sendMessageBatchCeiling,
  serialCeiling,
} from "./ceilings.ts";
import { countDynamoDb } from "./ddbCounter.ts";

const EVENTS = Number(process.env.OUTBOX_BENCH_EVENTS ?? 2000);
const AGGREGATES = 400;
const WRITE_CONCURRENCY = 16;

type Kind = "sqs" | "sqsFifo" | "kafka";
type Variant = "unnumbered" | "numbered" | "fresh" | "cold";
/** OUTBOX_BENCH_SCENARIOS=kafka (comma-separated) runs some of them, e.g. for a profile. @default all three */
const KINDS = (process.env.OUTBOX_BENCH_SCENARIOS ?? "sqs,sqsFifo,kafka")
  .split(",")
  .map((k) => k.trim()) as Kind[];
/** OUTBOX_BENCH_VARIANTS=fresh (comma-separated). @default unnumbered and fresh; numbered and cold too for SQS standard */
const VARIANTS = process.env.OUTBOX_BENCH_VARIANTS?.split(",").map((v) => v.trim()) as Variant[] | undefined;
const variantsOf = (kind: Kind): Variant[] =>
  VARIANTS ?? (kind === "sqs" ? ["unnumbered", "numbered", "fresh", "cold"] : ["unnumbered", "fresh"]);

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/**
 * The order audit: an event counts as out of order when its send starts before its predecessor's
 * send was acknowledged. `rank` is each event's place in its aggregate, from the table.
 */
function orderAudit(rank: ReadonlyMap<string, { aggregate: string; seq: number }>) {
  const acked = new Map<string, number>();
  const outOfOrder = new Set<string>();
  return {
    starting(eventIds: ReadonlyArray<string>) {
      for (const id of eventIds) {
        const r = rank.get(id);
        if (r && r.seq > 1 && (acked.get(r.aggregate) ?? 0) < r.seq - 1) outOfOrder.add(r.aggregate);
      }
    },
    acked(eventIds: ReadonlyArray<string>) {
      for (const id of eventIds) {
        const r = rank.get(id);
        if (r) acked.set(r.aggregate, Math.max(acked.get(r.aggregate) ?? 0, r.seq));
      }
    },
    get outOfOrderAggregates() {
      return outOfOrder.size;
    },
  };
}
type Audit = ReturnType<typeof orderAudit>;

/** Each event's place in its aggregate: its number, else its sort key's rank (unnumbered). */
async function ranks(client: DynamoDBClient, table: string) {
  const events: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const out = await client.send(
      new ScanCommand({ TableName: table, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    events.push(...(out.Items ?? []).filter((i) => i.sk?.S?.startsWith("EVENT#")));
    start = out.LastEvaluatedKey;
  } while (start);
  const byAggregate = new Map<string, typeof events>();
  for (const e of events) byAggregate.set(e.pk!.S!, [...(byAggregate.get(e.pk!.S!) ?? []), e]);
  const rank = new Map<string, { aggregate: string; seq: number }>();
  for (const [aggregate, list] of byAggregate) {
    const seqOf = (e: (typeof list)[number]) => Number(e[OUTBOX_ATTR.seq]?.N ?? 0);
    list.sort((a, b) => seqOf(a) - seqOf(b) || (a.sk!.S! < b.sk!.S! ? -1 : 1));
    list.forEach((e, i) => {
      rank.set(e[OUTBOX_ATTR.eventId]!.S!, { aggregate, seq: i + 1 });
    });
  }
  return rank;
}

/** The audit on every SendMessageBatch of a client (message-id attributes). */
function auditSqs(sqs: ReturnType<typeof createSqsClient>, audit: () => Audit | undefined) {
  let calls = 0;
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== "SendMessageBatchCommand") return next(args);
      calls++;
      const entries = (args.input as SendMessageBatchCommandInput).Entries ?? [];
      const ids = entries.map((e) => e.MessageAttributes?.["message-id"]?.StringValue ?? "");
      audit()?.starting(ids);
      const out = await next(args);
      const failed = new Set(((out.output as { Failed?: { Id?: string }[] }).Failed ?? []).map((f) => f.Id));
      audit()?.acked(ids.filter((_, i) => !failed.has(entries[i]!.Id)));
      return out;
    },
    { step: "initialize", name: "benchAuditSqs" },
  );
  return { calls: () => calls };
}

/** The shared producer, with the audit around each request. */
function auditedKafka(audit: () => Audit | undefined): KafkaProducer {
  const ids = (batch: Parameters<KafkaProducer["sendBatch"]>[0]) =>
    batch.flatMap((b) =>
      b.messages.map((m) => {
        const h = m.headers;
        const id = Array.isArray(h)
          ? (h as ReadonlyArray<KafkaHeader>).find((x) => x.name === "message-id")?.value
          : (h as Readonly<Record<string, string | Buffer>> | undefined)?.["message-id"];
        return String(id ?? "");
      }),
    );
  const real = () => getKafkaProducer();
  const sendBatch: KafkaProducer["sendBatch"] = async (batch) => {
    audit()?.starting(ids(batch));
    const out = await real().sendBatch(batch);
    audit()?.acked(ids(batch));
    return out;
  };
  return {
    sendBatch,
    send: (topic, messages) => sendBatch([{ topic, messages }]),
    disconnect: () => real().disconnect(),
  };
}

interface ScenarioResult {
  variant: Variant;
  events: number;
  batches: number;
  eventsPerSec: number;
  outOfOrderAggregates: number;
  /** Left to the sweeper behind a waiting predecessor (none expected here: nothing is dropped). */
  deferred: number;
  apiCallsPerEvent: {
    total: number;
    sqsSendMessageBatch: number;
    kafkaSend: number;
    dynamodb: number;
    dynamodbByCommand: Record<string, number>;
  };
  relayReadUnitsPerEvent: number;
  relayWriteUnitsPerEvent: number;
  /** Predecessors the relay read (where the order was in doubt), per event. */
  orderReadsPerEvent: number;
  ceiling: { publishPerSec: number; clearPerSec: number; relayPerSec: number; fraction: number };
  unitOfWork: {
    messagesPerSec: number;
    ddbRequestsPerMessage: number;
    writeUnitsPerMessage: number;
    actionsPerTransaction: number;
  };
}

/**
 * Each scenario on a DynamoDB Local of its own, stopped afterwards (as chaos/scenarios.ts
 * withOwnDynamoDb does): DynamoDB Local slows down with what it has held, deleted tables or not, so
 * on one shared instance the unit-of-work rate fell from 343 to 80 to 35 messages/s from the first
 * scenario to the third, and whichever ran last looked slowest.
 */
async function onOwnDynamoDb<T>(run: (endpoint: string) => Promise<T>): Promise<T> {
  const ddb = await startDynamoDbLocal({ fullJit: true });
  try {
    return await run(ddb.endpoint);
  } finally {
    await ddb.stop();
  }
}

/** The destination of a scenario: a queue or a topic, ready. */
async function destinationOf(kind: Kind, name: string, sqs: ReturnType<typeof createSqsClient>) {
  if (kind === "kafka") {
    // A real cluster auto-creates nothing: the topic as a stack would declare it (the mock: on first use).
    await createDeclaredTopicsOn(kafkaConfigFromEnv().brokers, [{ name, partitions: 4 }]);
    await getKafkaProducer().send(name, [{ key: "warm", value: "warm" }]); // connection
    return { destination: `kafka:${name}`, queueUrl: undefined };
  }
  const fifo = kind === "sqsFifo";
  const queueUrl = (
    await sqs.send(
      new CreateQueueCommand({
        QueueName: `${name}${fifo ? ".fifo" : ""}`,
        Attributes: fifo ? { FifoQueue: "true" } : {},
      }),
    )
  ).QueueUrl!;
  return { destination: `sqs:${queueUrl}`, queueUrl };
}

/** 1. The unit of work: one transaction per message (marker + order + event), timed. */
async function writeEvents(client: DynamoDBClient, table: string, destination: string, variant: Variant) {
  const writes = countDynamoDb(client);
  const uow = createInboxOutbox({
    tableName: table,
    scope: "bench",
    client,
    defaultDestination: destination,
    aggregateSequence: variant !== "unnumbered",
  });
  let next = 0;
  let actions = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: WRITE_CONCURRENCY }, async () => {
      while (next < EVENTS) {
        const i = next++;
        const orderId = `o-${i}`;
        const body = { orderId, customerId: `c-${i % 97}`, amountCents: 1000 + i };
        const source = {
          kind: "sqs" as const,
          queueArn: "arn:aws:sqs:us-east-1:000000000000:orders",
          messageId: `m-${i}`,
        };
        const envelope = {
          id: orderId,
          idSource: "business" as const,
          key: undefined,
          body,
          raw: JSON.stringify(body),
          headers: {},
          attempt: 1,
          source,
        };
        const out = await uow.run(envelope, (tx) => {
          tx.put({ Item: { pk: `ORDER#${orderId}`, sk: "ORDER", ...body } });
          tx.publish({
            aggregateType: "customer",
            aggregateId: `c-${i % AGGREGATES}`,
            eventType: "OrderPlaced",
            payload: body,
          });
        });
        if (out.status === "committed") actions += out.actions;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return {
    messagesPerSec: Math.round(EVENTS / seconds),
    ddbRequestsPerMessage: round3(writes.requests / EVENTS),
    writeUnitsPerMessage: round3(writes.writeUnits / EVENTS),
    actionsPerTransaction: round3(actions / EVENTS),
  };
}

/** 2. The stream as Lambda would deliver it (batches of 100, filtered), not timed. */
async function collectBatches(endpoint: string, streamArn: string): Promise<DynamoDBStreamEvent[]> {
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
  return batches;
}

/** 4. What the substrates do alone (bench/ceilings.ts), on this scenario's DynamoDB Local and destination. */
async function relayCeiling(
  kind: Kind,
  client: DynamoDBClient,
  table: string,
  sqs: ReturnType<typeof createSqsClient>,
  target: { destination: string; queueUrl: string | undefined },
) {
  const clear = await batchPutCeiling(client, table, EVENTS, 4);
  const publish =
    kind === "kafka"
      ? await kafkaProduceCeiling(target.destination.slice("kafka:".length), EVENTS, 100)
      : await sendMessageBatchCeiling(sqs, target.queueUrl!, EVENTS, 10);
  return {
    publishPerSec: publish.perSec,
    clearPerSec: clear.perSec,
    relayPerSec: serialCeiling(publish.perSec, clear.perSec),
  };
}

async function scenario(
  kind: Kind,
  variant: Variant,
  run: string,
  endpoint: string,
): Promise<ScenarioResult> {
  const writerClient = new DynamoDBClient({ endpoint });
  const relayClient = new DynamoDBClient({ endpoint });
  const sqs = createSqsClient();
  const table = `bench-outbox-${kind}-${variant}-${run}`;
  const streamArn = await createAppTable(writerClient, table);
  const target = await destinationOf(kind, `bench-outbox-${variant}-${run}`, sqs);
  try {
    const unitOfWork = await writeEvents(writerClient, table, target.destination, variant);
    const batches = await collectBatches(endpoint, streamArn);
    const audit = orderAudit(await ranks(writerClient, table));

    // 3. The relay, one batch after another (one shard, as Lambda runs it), timed.
    const relaySqs = createSqsClient();
    const sqsCalls = auditSqs(relaySqs, () => audit);
    const relayDdb = countDynamoDb(relayClient);
    const publisher = createOutboxPublisher({ sqs: relaySqs, kafka: auditedKafka(() => audit) });
    const relay = createOutboxRelay({
      tableName: table,
      client: relayClient,
      publisher,
      ...(variant === "cold" ? { aggregateCache: false as const } : {}),
      ...(variant === "fresh" || variant === "cold" ? { unnumberedEvents: false } : {}),
    });
    let orderReads = 0;
    let deferred = 0;
    const t1 = performance.now();
    for (const batch of batches) {
      const response = await relay.handler(batch);
      if (response.batchItemFailures.length > 0) throw new Error(`relay failed a batch (${kind})`);
      orderReads += relay.lastReport?.orderReads ?? 0;
      deferred += relay.lastReport?.deferred ?? 0;
    }
    const relayMs = performance.now() - t1;
    const eventsPerSec = Math.round(EVENTS / (relayMs / 1000));
    // On a client of its own: the probe's writes are not the relay's.
    const ceiling = await relayCeiling(kind, writerClient, table, sqs, target);
    const calls = {
      sqsSendMessageBatch: sqsCalls.calls() / EVENTS,
      kafkaSend: publisher.calls.kafkaSend / EVENTS,
      dynamodb: relayDdb.requests / EVENTS,
    };
    return {
      variant,
      events: EVENTS,
      batches: batches.length,
      eventsPerSec,
      outOfOrderAggregates: audit.outOfOrderAggregates,
      deferred,
      apiCallsPerEvent: {
        total: round3(calls.sqsSendMessageBatch + calls.kafkaSend + calls.dynamodb),
        sqsSendMessageBatch: round3(calls.sqsSendMessageBatch),
        kafkaSend: round3(calls.kafkaSend),
        dynamodb: round3(calls.dynamodb),
        dynamodbByCommand: Object.fromEntries(
          Object.entries(relayDdb.byCommand).map(([c, n]) => [c, round3(n / EVENTS)]),
        ),
      },
      relayReadUnitsPerEvent: round3(relayDdb.readUnits / EVENTS),
      relayWriteUnitsPerEvent: round3(relayDdb.writeUnits / EVENTS),
      orderReadsPerEvent: round3(orderReads / EVENTS),
      ceiling: { ...ceiling, fraction: fractionOf(eventsPerSec, ceiling.relayPerSec) },
      unitOfWork,
    };
  } finally {
    await deleteTable(writerClient, table);
    if (target.queueUrl)
      await sqs.send(new DeleteQueueCommand({ QueueUrl: target.queueUrl })).catch(() => {});
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
    for (const kind of kinds.filter((k) => KINDS.includes(k))) {
      const byVariant: Record<string, ScenarioResult> = {};
      for (const variant of variantsOf(kind)) {
        byVariant[variant] = await onOwnDynamoDb((endpoint) => scenario(kind, variant, run, endpoint));
        console.error(
          `outbox ${kind} ${variant}: ${byVariant[variant].eventsPerSec} events/s (${byVariant[variant].ceiling.fraction} of its ceiling), ${byVariant[variant].apiCallsPerEvent.dynamodb} DynamoDB calls and ${byVariant[variant].relayReadUnitsPerEvent} read units per event, ${byVariant[variant].outOfOrderAggregates} aggregates out of order`,
        );
      }
      results[kind] = byVariant;
    }
    return results;
  } finally {
    await disconnectAllKafkaProducers();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { startEmulators } = await import("reliable-consumers-local");
  const emulators = await startEmulators({ fullJit: true });
  process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
  try {
    console.log(JSON.stringify(await runOutboxBench(), null, 2));
  } finally {
    await emulators.stop();
  }
}
