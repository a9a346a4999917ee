import { randomInt, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type DynamoDBClient,
  QueryCommand,
  ScanCommand,
  type ScanCommandInput,
} from "@aws-sdk/client-dynamodb";
import { SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Kafka } from "kafkajs";
import { OUTBOX_TABLE } from "reliable-consumers/outbox";
import type { LocalRuntime } from "reliable-consumers-local";
import type { KafkaMapping, LocalQueue, SqsMapping } from "../local/src/runtime/model.ts";
import { queueDepth as queueDepthOf } from "../local/src/services/sqs/queueDepth.ts";

export interface ScenarioOptions {
  readonly messages: number;
  /** Fraction of sends that resend an earlier order (0.1 = 10 %). */
  readonly duplicates: number;
  /** Fraction of sends that are poison (invalid JSON or schema). */
  readonly poison: number;
  readonly longJobs: number;
  /** ms of work per long job. */
  readonly longJobMs: number;
  /**
   * Offer the sends at this steady rate (messages per second, in SendMessageBatch calls of 10
   * spaced evenly) instead of as fast as SQS takes them. @default none: a burst
   */
  readonly rate?: number;
  /**
   * Seconds at the start of a steady run whose orders the `afterWarmup` latencies leave out: the
   * JVMs' JIT and the functions' cold starts, not the path. @default 0 (no `afterWarmup` figures)
   */
  readonly warmupSeconds?: number;
}

/** The reference service's pieces, found from the materialised app (not from hard-coded names). */
export interface ScenarioTargets {
  readonly orders: LocalQueue;
  readonly ordersDlq: LocalQueue;
  readonly reports?: LocalQueue;
  readonly appTable: string;
  readonly mainTopic: string;
  readonly paymentGroup: string;
  readonly kafkaMappings: KafkaMapping[];
  readonly watchedQueues: LocalQueue[];
}

export function scenarioTargets(runtime: LocalRuntime): ScenarioTargets {
  const { app } = runtime;
  const orderConsumer = runtime.findFunction("/order-consumer/");
  const sqsOf = (fnName: string) =>
    app.mappings.find((m): m is SqsMapping => m.kind === "sqs" && m.functionName === fnName);
  const ordersMapping = sqsOf(orderConsumer.name);
  if (!ordersMapping) throw new Error("order-consumer has no SQS trigger in the template");
  const orders = ordersMapping.queue;
  const ordersDlq = app.queues.find((q) => q.arn === orders.deadLetterQueueArn);
  if (!ordersDlq) throw new Error(`${orders.name} has no redrive DLQ`);
  const appTable = orderConsumer.environment.APP_TABLE_NAME;
  if (!appTable) throw new Error("order-consumer has no APP_TABLE_NAME");
  const payment = runtime.findFunction("/payment-consumer/");
  const kafkaMappings = app.mappings.filter((m): m is KafkaMapping => m.kind === "kafka");
  const main = kafkaMappings.find(
    (m) => m.functionName === payment.name && !m.topics.some((t) => /\.retry\./.test(t)),
  );
  if (!main) throw new Error("payment-consumer has no Kafka trigger in the template");
  let reports: LocalQueue | undefined;
  try {
    reports = sqsOf(runtime.findFunction("/report-worker/").name)?.queue;
  } catch {
    reports = undefined;
  }
  const watchedQueues = app.mappings.filter((m): m is SqsMapping => m.kind === "sqs").map((m) => m.queue);
  return {
    orders,
    ordersDlq,
    ...(reports ? { reports } : {}),
    appTable,
    mainTopic: main.topics[0]!,
    paymentGroup: main.consumerGroupId,
    kafkaMappings,
    watchedQueues,
  };
}

export interface SentLog {
  readonly sent: number;
  readonly validSends: number;
  readonly duplicateSends: number;
  readonly poison: number;
  /** orderId → first send time (the client's clock). */
  readonly firstSentAt: Map<string, number>;
  readonly longJobs: string[];
  /** Messages per second the sends achieved (with `rate`, the offered rate unless SQS fell behind). */
  readonly sendRate: number;
  /** The steady rate offered (`ScenarioOptions.rate`), if any. */
  readonly offeredRate: number | undefined;
  /** When the first send left (the client's clock). */
  readonly startedAt: number;
  /** `ScenarioOptions.warmupSeconds`. */
  readonly warmupSeconds: number;
}

/**
 * Sends the orders: `messages` sends in all, of which `poison` are poison and `duplicates` resend an
 * earlier order (same order id, new SQS message), some right away and some later.
 */
export async function sendOrders(
  sqs: SQSClient,
  targets: ScenarioTargets,
  options: ScenarioOptions,
  onProgress?: (sent: number) => void,
): Promise<SentLog> {
  const total = options.messages;
  const poison = Math.round(total * options.poison);
  const duplicateSends = Math.min(Math.round(total * options.duplicates), Math.max(0, total - poison - 1));
  const unique = total - poison - duplicateSends;
  const run = randomUUID().slice(0, 8);
  type Send = { body: string; orderId?: string };
  const sends: Send[] = [];
  const bodies: Send[] = [];
  for (let i = 0; i < unique; i++) {
    const orderId = `order-${run}-${String(i).padStart(6, "0")}`;
    const body = JSON.stringify({
      orderId,
      customerId: `customer-${randomInt(1, 200)}`,
      amountCents: randomInt(100, 50_000),
      items: [{ sku: `sku-${randomInt(1, 50)}`, qty: randomInt(1, 4) }],
    });
    bodies.push({ body, orderId });
    sends.push({ body, orderId });
  }
  // Duplicates: resend a random earlier order, half of them right after it, half anywhere later.
  for (let d = 0; d < duplicateSends; d++) {
    const i = randomInt(0, unique);
    const at =
      d % 2 === 0
        ? Math.min(sends.length, sends.indexOf(bodies[i]!) + 1)
        : randomInt(sends.indexOf(bodies[i]!) + 1, sends.length + 1);
    sends.splice(at, 0, { ...bodies[i]! });
  }
  for (let p = 0; p < poison; p++) {
    const body =
      p % 2 === 0
        ? `{"orderId":"poison-${run}-${p}","customerId":`
        : JSON.stringify({ orderId: `poison-${run}-${p}`, amountCents: -1 });
    sends.splice(randomInt(0, sends.length + 1), 0, { body });
  }
  const firstSentAt = new Map<string, number>();
  let next = 0;
  let sent = 0;
  const started = Date.now();
  const sender = async () => {
    while (next < sends.length) {
      const at = next;
      const chunk = sends.slice(next, next + 10);
      next += chunk.length;
      // A steady rate: chunk k leaves k × 10 / rate seconds after the start (a late one at once).
      if (options.rate) await sleep(Math.max(0, started + (at / options.rate) * 1000 - Date.now()));
      const now = Date.now();
      for (const s of chunk) if (s.orderId && !firstSentAt.has(s.orderId)) firstSentAt.set(s.orderId, now);
      const out = await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: targets.orders.url,
          Entries: chunk.map((s, j) => ({ Id: String(j), MessageBody: s.body })),
        }),
      );
      if (out.Failed?.length) throw new Error(`SendMessageBatch failed: ${JSON.stringify(out.Failed[0])}`);
      sent += chunk.length;
      onProgress?.(sent);
    }
  };
  await Promise.all(Array.from({ length: 4 }, sender));
  const sendSeconds = (Date.now() - started) / 1000;
  const longJobs: string[] = [];
  if (targets.reports && options.longJobs > 0) {
    const entries = Array.from({ length: options.longJobs }, (_, i) => {
      const reportId = `report-${run}-${i}`;
      longJobs.push(reportId);
      return {
        Id: String(i),
        MessageBody: JSON.stringify({ reportId, workMs: options.longJobMs + i * 1000 }),
      };
    });
    for (let i = 0; i < entries.length; i += 10)
      await sqs.send(
        new SendMessageBatchCommand({ QueueUrl: targets.reports.url, Entries: entries.slice(i, i + 10) }),
      );
  }
  return {
    sent: sends.length,
    validSends: unique + duplicateSends,
    duplicateSends,
    poison,
    firstSentAt,
    longJobs,
    sendRate: Math.round(sends.length / Math.max(sendSeconds, 0.001)),
    offeredRate: options.rate,
    startedAt: started,
    warmupSeconds: options.warmupSeconds ?? 0,
  };
}

async function scanAll(ddb: DynamoDBClient, input: ScanCommandInput) {
  const items = [];
  let start: ScanCommandInput["ExclusiveStartKey"];
  do {
    const out = await ddb.send(new ScanCommand({ ...input, ...(start ? { ExclusiveStartKey: start } : {}) }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Every message of the queue not yet deleted: visible, in flight or delayed. */
export async function queueDepth(sqs: SQSClient, q: LocalQueue): Promise<number> {
  const d = await queueDepthOf(sqs, q.url);
  return d.visible + d.inFlight + d.delayed;
}

/** Outbox events not yet published: the sparse pending GSI, every shard. */
export async function pendingOutbox(ddb: DynamoDBClient, table: string): Promise<number> {
  let n = 0;
  for (let s = 0; s < OUTBOX_TABLE.defaults.pendingShards; s++) {
    const out = await ddb.send(
      new QueryCommand({
        TableName: table,
        IndexName: OUTBOX_TABLE.pendingIndex.name,
        KeyConditionExpression: "#p = :s",
        ExpressionAttributeNames: { "#p": "pending" },
        ExpressionAttributeValues: { ":s": { S: String(s) } },
        Select: "COUNT",
      }),
    );
    n += out.Count ?? 0;
  }
  return n;
}

/** Consumer lag of every Kafka mapping (committed offsets vs. high watermarks), from the cluster. */
export async function kafkaLag(kafka: Kafka, mappings: readonly KafkaMapping[]): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    let lag = 0;
    for (const m of mappings) {
      for (const topic of m.topics) {
        const ends = await admin.fetchTopicOffsets(topic);
        const [committed] = await admin.fetchOffsets({ groupId: m.consumerGroupId, topics: [topic] });
        for (const e of ends) {
          const c = Number(committed?.partitions.find((p) => p.partition === e.partition)?.offset ?? -1);
          lag += Number(e.high) - (c >= 0 ? c : Number(e.low));
        }
      }
    }
    return lag;
  } finally {
    await admin.disconnect();
  }
}

export interface Census {
  readonly ordersStored: number;
  readonly outboxEvents: number;
  readonly outboxPending: number;
  readonly outboxPublished: number;
  readonly kafkaConsumed: number;
  readonly charged: number;
  readonly paymentReplays: number;
  readonly dlq: number;
  readonly kafkaDeadLetters: number;
  readonly reportsDone: number;
  readonly lost: number;
  readonly lostDetail: {
    notStored: number;
    notPublished: number;
    notCharged: number;
    poisonNotParked: number;
    longJobsNotDone: number;
  };
  readonly duplicateEffects: number;
  readonly e2eP50Ms: number;
  readonly e2eP99Ms: number;
  /** The legs of send → charge (p50 and p99 of each), from the stored timestamps. */
  readonly e2eStagesMs: Record<"toCommit" | "toPublish" | "toCharge", { p50: number; p99: number }>;
  /** The same three figures over the orders sent after `SentLog.warmupSeconds`, when set. */
  readonly afterWarmup?: Pick<Census, "e2eP50Ms" | "e2eP99Ms" | "e2eStagesMs">;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function readTopic(kafka: Kafka, topic: string): Promise<Array<{ key: string; eventId: string }>> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const remaining = new Map(
    ends.filter((e) => Number(e.high) > Number(e.low)).map((e) => [e.partition, Number(e.high)]),
  );
  const out: Array<{ key: string; eventId: string }> = [];
  if (remaining.size === 0) return out;
  const consumer = kafka.consumer({ groupId: `local-census-${randomUUID()}`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`reading ${topic} timed out`)), 60_000);
    consumer
      .run({
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            out.push({ key: m.key?.toString() ?? "", eventId: m.headers?.["message-id"]?.toString() ?? "" });
          }
          const end = remaining.get(batch.partition);
          if (end !== undefined && Number(batch.lastOffset()) + 1 >= end) remaining.delete(batch.partition);
          if (remaining.size === 0) {
            clearTimeout(timer);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  return out;
}

/** Records the payment consumer committed, and records on the dead-letter topic. */
async function kafkaCounts(kafka: Kafka, targets: ScenarioTargets) {
  const admin = kafka.admin();
  await admin.connect();
  const [committed] = await admin.fetchOffsets({
    groupId: targets.paymentGroup,
    topics: [targets.mainTopic],
  });
  const kafkaConsumed = (committed?.partitions ?? []).reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
  let kafkaDeadLetters = 0;
  const dltTopic = `${targets.mainTopic}.DLQ`;
  try {
    for (const o of await admin.fetchTopicOffsets(dltTopic))
      kafkaDeadLetters += Number(o.high) - Number(o.low);
  } catch {
    kafkaDeadLetters = 0;
  }
  await admin.disconnect();
  return { kafkaConsumed, kafkaDeadLetters };
}

/** The provider's charges per order, the first charge's time, and the replays it answered. */
async function chargeCounts(ddb: DynamoDBClient, providerTable: string) {
  const charges = await scanAll(ddb, { TableName: providerTable });
  const chargesPerOrder = new Map<string, number>();
  let paymentReplays = 0;
  const chargedAt = new Map<string, number>();
  for (const c of charges) {
    const id = c.orderId?.S ?? "";
    chargesPerOrder.set(id, (chargesPerOrder.get(id) ?? 0) + 1);
    paymentReplays += Number(c.replays?.N ?? 0);
    const at = Number(c.chargedAt?.N ?? 0);
    chargedAt.set(id, Math.min(at, chargedAt.get(id) ?? Number.POSITIVE_INFINITY));
  }
  return { chargesPerOrder, chargedAt, paymentReplays };
}

/** How many long jobs wrote their report. */
async function reportsDoneOf(ddb: DynamoDBClient, appTable: string, longJobs: ReadonlyArray<string>) {
  if (longJobs.length === 0) return 0;
  const reports = await scanAll(ddb, {
    TableName: appTable,
    FilterExpression: "begins_with(pk, :r)",
    ExpressionAttributeValues: { ":r": { S: "REPORT#" } },
    ProjectionExpression: "pk",
  });
  const done = new Set(reports.map((r) => r.pk?.S?.slice("REPORT#".length)));
  return longJobs.filter((j) => done.has(j)).length;
}

/** Everything the RESULT line says, counted from the tables, queues and topics. */
export async function census(args: {
  ddb: DynamoDBClient;
  sqs: SQSClient;
  kafka: Kafka;
  targets: ScenarioTargets;
  providerTable: string;
  sent: SentLog;
}): Promise<Census> {
  const { ddb, sqs, kafka, targets, sent } = args;
  const orderItems = await scanAll(ddb, {
    TableName: targets.appTable,
    FilterExpression: "begins_with(pk, :o)",
    ExpressionAttributeValues: { ":o": { S: "ORDER#" } },
    ProjectionExpression: "orderId",
  });
  const stored = new Set(orderItems.map((i) => i.orderId?.S ?? ""));
  const outboxItems = await scanAll(ddb, {
    TableName: targets.appTable,
    // Events only: each aggregate also has its head item (`HEAD`, lib/outbox/aggregateHeads.ts).
    FilterExpression: "begins_with(pk, :o) AND begins_with(sk, :e)",
    ExpressionAttributeValues: { ":o": { S: "OUTBOX#" }, ":e": { S: "EVENT#" } },
    ProjectionExpression: "eventId, aggregateId, pending, createdAt, publishedAt",
  });
  const eventsPerOrder = new Map<string, Set<string>>();
  let outboxPending = 0;
  for (const i of outboxItems) {
    const id = i.aggregateId?.S ?? "";
    eventsPerOrder.set(id, (eventsPerOrder.get(id) ?? new Set()).add(i.eventId?.S ?? ""));
    if (i.pending) outboxPending++;
  }
  const published = await readTopic(kafka, targets.mainTopic);
  const publishedOrders = new Set(published.map((p) => p.key));
  const publishedEvents = new Set(published.map((p) => p.eventId));
  const { kafkaConsumed, kafkaDeadLetters } = await kafkaCounts(kafka, targets);
  const { chargesPerOrder, chargedAt, paymentReplays } = await chargeCounts(ddb, args.providerTable);
  const dlq = await queueDepth(sqs, targets.ordersDlq);
  const reportsDone = await reportsDoneOf(ddb, targets.appTable, sent.longJobs);
  const orderIds = [...sent.firstSentAt.keys()];
  const notStored = orderIds.filter((o) => !stored.has(o)).length;
  const notPublished = orderIds.filter((o) => stored.has(o) && !publishedOrders.has(o)).length;
  const notCharged = orderIds.filter((o) => !chargesPerOrder.has(o)).length;
  const poisonNotParked = Math.max(0, sent.poison - dlq);
  const longJobsNotDone = sent.longJobs.length - reportsDone;
  let duplicateEffects = 0;
  for (const o of orderIds) {
    duplicateEffects += Math.max(0, (eventsPerOrder.get(o)?.size ?? 0) - 1);
    duplicateEffects += Math.max(0, (chargesPerOrder.get(o) ?? 0) - 1);
  }
  return {
    ordersStored: orderIds.filter((o) => stored.has(o)).length,
    outboxEvents: outboxItems.length,
    outboxPending,
    outboxPublished: publishedEvents.size,
    kafkaConsumed,
    charged: orderIds.filter((o) => chargesPerOrder.has(o)).length,
    paymentReplays,
    dlq,
    kafkaDeadLetters,
    reportsDone,
    lost: notCharged + poisonNotParked + longJobsNotDone,
    lostDetail: { notStored, notPublished, notCharged, poisonNotParked, longJobsNotDone },
    duplicateEffects,
    ...latencyFigures(orderIds, sent, chargedAt, outboxItems),
    // The same figures over the orders sent after the warm-up: the path at a steady state.
    ...(sent.warmupSeconds > 0
      ? {
          afterWarmup: latencyFigures(
            orderIds.filter((o) => sent.firstSentAt.get(o)! >= sent.startedAt + sent.warmupSeconds * 1000),
            sent,
            chargedAt,
            outboxItems,
          ),
        }
      : {}),
  };
}

/**
 * Send to charge per order (the client's send time to the provider's first charge), and the three
 * legs of it from the stored timestamps: to the unit of work (the order consumer's commit: the
 * queue and the SQS mapping), to the relay's publish (the stream, its batching window, the
 * publish), to the charge (the topic, the Kafka mapping, the payment consumer and the provider).
 */
function latencyFigures(
  orderIds: ReadonlyArray<string>,
  sent: SentLog,
  chargedAt: ReadonlyMap<string, number>,
  outboxItems: ReadonlyArray<Record<string, { S?: string; N?: string }>>,
) {
  const event = new Map(outboxItems.map((i) => [i.aggregateId?.S ?? "", i]));
  const legs = { toCommit: [] as number[], toPublish: [] as number[], toCharge: [] as number[] };
  const total: number[] = [];
  for (const o of orderIds) {
    const charged = chargedAt.get(o);
    const sentAt = sent.firstSentAt.get(o)!;
    if (charged === undefined) continue;
    total.push(charged - sentAt);
    const created = Number(event.get(o)?.createdAt?.N ?? Number.NaN);
    const published = Number(event.get(o)?.publishedAt?.N ?? Number.NaN);
    if (!Number.isFinite(created) || !Number.isFinite(published)) continue;
    legs.toCommit.push(created - sentAt);
    legs.toPublish.push(published - created);
    legs.toCharge.push(charged - published);
  }
  const p = (values: number[], q: number) =>
    Math.round(
      percentile(
        [...values].sort((a, b) => a - b),
        q,
      ),
    );
  const stages = Object.fromEntries(
    Object.entries(legs).map(([k, v]) => [k, { p50: p(v, 50), p99: p(v, 99) }]),
  ) as Record<keyof typeof legs, { p50: number; p99: number }>;
  return { e2eP50Ms: p(total, 50), e2eP99Ms: p(total, 99), e2eStagesMs: stages };
}

export interface QuietState {
  readonly queued: number;
  readonly outboxPending: number;
  readonly kafkaLag: number;
  readonly busy: number;
  readonly charged: number;
}

/** Polls the stored state until queues are empty, the outbox is published, every consumer group is caught up and nothing runs. */
export async function waitUntilQuiet(args: {
  runtime: LocalRuntime;
  ddb: DynamoDBClient;
  sqs: SQSClient;
  kafka: Kafka;
  targets: ScenarioTargets;
  providerTable: string;
  timeoutMs: number;
  onProgress?: (s: QuietState) => void;
}): Promise<boolean> {
  const deadline = Date.now() + args.timeoutMs;
  let quietRounds = 0;
  while (Date.now() < deadline) {
    const queued = (await Promise.all(args.targets.watchedQueues.map((q) => queueDepth(args.sqs, q)))).reduce(
      (a, b) => a + b,
      0,
    );
    const outboxPending = await pendingOutbox(args.ddb, args.targets.appTable);
    const lag = await kafkaLag(args.kafka, args.targets.kafkaMappings);
    const busy = args.runtime.busy();
    const charged =
      (await args.ddb.send(new ScanCommand({ TableName: args.providerTable, Select: "COUNT" }))).Count ?? 0;
    args.onProgress?.({ queued, outboxPending, kafkaLag: lag, busy, charged });
    quietRounds = queued === 0 && outboxPending === 0 && lag === 0 && busy === 0 ? quietRounds + 1 : 0;
    if (quietRounds >= 2) return true;
    await sleep(quietRounds > 0 ? 1500 : 2000);
  }
  return false;
}
