import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { Kafka, logLevel } from "kafkajs";
import { createAppTable } from "../local/appTable.ts";
import { createDedupTable } from "../local/resources.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import { createFunctionPool, type FunctionEnvironment, type FunctionPool } from "./functionHost.ts";
import { REDIRECT_ENV, type RedirectMap, redirectingSocketFactory } from "./netRedirect.ts";
import { type CrashDecision, type PaymentProvider, startPaymentProvider } from "./paymentProvider.ts";
import {
  startKafkaTrigger,
  startSchedule,
  startSqsTrigger,
  startStreamTrigger,
  type Trigger,
} from "./triggers.ts";

/**
 * The reference service (functions/*) wired the way the CDK app wires it, on chaos-controllable
 * endpoints: SQS orders (+ redrive DLQ) → order-consumer → app table → stream → outbox-relay →
 * Kafka order-events → payment-consumer (retry ladder, DLQ topic) → payment provider; the
 * outbox-sweeper on a schedule. Every handler runs unmodified in its own killable process; the
 * triggers play Lambda's event source mappings.
 */
export interface Endpoints {
  readonly dynamodb: string;
  readonly sqs: string;
  readonly kafkaBrokers: readonly string[];
}

export interface ReferenceServiceOptions {
  /** Unique per run: prefixes every table, queue, topic and consumer group. */
  readonly prefix: string;
  /** Where the runner's own clients (triggers, checks) go. */
  readonly direct: Endpoints;
  /** Where the handlers' SDK clients go (a fault proxy, a TCP proxy...). @default direct */
  readonly functionEndpoints?: Partial<Pick<Endpoints, "dynamodb" | "sqs">>;
  /** Kafka broker address → proxy address, for the handlers and the runner's Kafka clients. */
  readonly kafkaRedirect?: RedirectMap;
  /** Retry rungs of the payment consumer. Their sum must outlast the 30 s dedup lease. */
  readonly ladderDelaysMs?: readonly number[];
  /** Environments (and SQS pollers) of order-consumer. @default 2 */
  readonly orderConsumers?: number;
  /** Members of each payment-consumer group on the main topic. @default 1 */
  readonly paymentMembers?: number;
  readonly maxReceiveCount?: number;
  readonly visibilityTimeoutSeconds?: number;
  readonly crashDecision?: (orderId: string) => CrashDecision;
  /** Called with every SQS / stream / Kafka client the runner creates (SDK fault injection). */
  readonly instrument?: (client: SQSClient | DynamoDBClient | DynamoDBStreamsClient) => void;
  /** Sweeper period and minimum age. @default 2 000 / 5 000 ms */
  readonly sweepEveryMs?: number;
  readonly sweepMinAgeMs?: number;
  /** Called for each SQS invocation of order-consumer (crash injection). */
  readonly onOrderInvoke?: (pool: FunctionPool) => void;
  readonly streamBatchSize?: number;
  /** Start the triggers of these stages only. @default all */
  readonly stages?: ReadonlyArray<"orders" | "relay" | "payments">;
}

export interface ReferenceService {
  readonly names: {
    appTable: string;
    dedupTable: string;
    ordersUrl: string;
    ordersArn: string;
    ordersDlqUrl: string;
    parkingUrl: string;
    topic: string;
    retryTopics: string[];
    deadLetterTopic: string;
  };
  readonly streamArn: string;
  readonly provider: PaymentProvider;
  readonly pools: Record<"orders" | "relay" | "sweeper" | "payments", FunctionPool>;
  readonly kafka: Kafka;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /** Sends SQS messages to the orders queue (batches of 10). */
  send(
    messages: ReadonlyArray<{ body: string; attributes?: Record<string, MessageAttributeValue> }>,
  ): Promise<void>;
  /** Visible + in-flight messages of the orders queue. */
  ordersInQueue(): Promise<number>;
  /** Adds one member to each payment-consumer group (a rebalance). */
  addPaymentMember(): Promise<void>;
  /** Stops the newest member of the main topic's group (a rebalance). */
  removePaymentMember(): Promise<void>;
  readonly triggers: Trigger[];
  stop(): Promise<void>;
}

const FUNCTIONS = fileURLToPath(new URL("../../functions/", import.meta.url));
const PRELOAD = fileURLToPath(new URL("./netRedirect.ts", import.meta.url));

export async function startReferenceService(options: ReferenceServiceOptions): Promise<ReferenceService> {
  const p = options.prefix;
  const region = "us-east-1";
  const credentials = { accessKeyId: "local", secretAccessKey: "local" };
  const instrument = <T extends SQSClient | DynamoDBClient | DynamoDBStreamsClient>(c: T): T => {
    options.instrument?.(c);
    return c;
  };
  const dynamodb = instrument(new DynamoDBClient({ endpoint: options.direct.dynamodb, region, credentials }));
  const sqs = instrument(createSqsClient({ endpoint: options.direct.sqs, region, credentials }));
  const streams = () =>
    instrument(new DynamoDBStreamsClient({ endpoint: options.direct.dynamodb, region, credentials }));
  const kafka = new Kafka({
    clientId: `${p}-triggers`,
    brokers: [...options.direct.kafkaBrokers],
    logLevel: logLevel.NOTHING,
    retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2_000 },
    ...(options.kafkaRedirect ? { socketFactory: redirectingSocketFactory(options.kafkaRedirect) } : {}),
  });

  // Resources, as the CDK stack declares them.
  const appTable = `${p}-app`;
  const dedupTable = `${p}-dedup`;
  const streamArn = await createAppTable(dynamodb, appTable);
  await createDedupTable(dynamodb, dedupTable);
  const queue = async (name: string, attributes: Record<string, string> = {}) =>
    (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl!;
  const arnOf = async (url: string) =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] })))
      .Attributes!.QueueArn!;
  const ordersDlqUrl = await queue(`${p}-orders-dlq`);
  const parkingUrl = await queue(`${p}-outbox-parking`);
  const ordersUrl = await queue(`${p}-orders`, {
    VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 6),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: await arnOf(ordersDlqUrl),
      maxReceiveCount: options.maxReceiveCount ?? 10,
    }),
  });
  const ordersArn = await arnOf(ordersUrl);
  const topic = `${p}-order-events`;
  const delays = options.ladderDelaysMs ?? [1_000, 5_000, 35_000];
  const fmt = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);
  const retryTopics = [...new Set(delays.map((d) => `${topic}.retry.${fmt(d)}`))];
  const deadLetterTopic = `${topic}.DLQ`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.fetchTopicMetadata({ topics: [topic, ...retryTopics, deadLetterTopic] });
  await admin.disconnect();

  // The external effect, with crash hooks that kill whichever environment is charging the order.
  const charging = new Map<string, Set<FunctionEnvironment>>();
  const dir = mkdtempSync(join(tmpdir(), `${p}-`));
  const provider = await startPaymentProvider({
    ledgerFile: join(dir, "charges.jsonl"),
    ...(options.crashDecision ? { decide: options.crashDecision } : {}),
    killCaller: (orderId) => {
      const envs = [...(charging.get(orderId) ?? [])].filter((e) => !e.dead);
      if (envs.length === 0) return false;
      // Recorded before the kill (also by the pool's onKill): every order these environments
      // charged and had not completed yet may be charged again, and the accounting must see why.
      for (const env of envs) {
        provider.recordCrash(env.pid, `crash hook for ${orderId}`);
        env.kill();
      }
      return true;
    },
    callerPids: (orderId) => [...(charging.get(orderId) ?? [])].map((e) => e.pid),
  });

  const fnEnv = (extra: Record<string, string>): Record<string, string> => ({
    AWS_ENDPOINT_URL_DYNAMODB: options.functionEndpoints?.dynamodb ?? options.direct.dynamodb,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: options.functionEndpoints?.dynamodb ?? options.direct.dynamodb,
    AWS_ENDPOINT_URL_SQS: options.functionEndpoints?.sqs ?? options.direct.sqs,
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    KAFKA_BROKERS: options.direct.kafkaBrokers.join(","),
    ...(options.kafkaRedirect ? { [REDIRECT_ENV]: JSON.stringify(options.kafkaRedirect) } : {}),
    ...extra,
  });
  const execArgv = options.kafkaRedirect ? ["--import", PRELOAD] : [];
  const orderConsumers = options.orderConsumers ?? 2;
  const pools = {
    orders: createFunctionPool(
      {
        name: "order-consumer",
        module: join(FUNCTIONS, "order-consumer/handler.ts"),
        env: fnEnv({ APP_TABLE_NAME: appTable, KAFKA_TOPIC: topic, DLQ_URL: ordersDlqUrl }),
        execArgv,
      },
      orderConsumers,
    ),
    relay: createFunctionPool({
      name: "outbox-relay",
      module: join(FUNCTIONS, "outbox-relay/handler.ts"),
      env: fnEnv({ APP_TABLE_NAME: appTable, OUTBOX_PARKING_QUEUE_URL: parkingUrl }),
      execArgv,
    }),
    sweeper: createFunctionPool({
      name: "outbox-sweeper",
      module: join(FUNCTIONS, "outbox-sweeper/handler.ts"),
      env: fnEnv({
        APP_TABLE_NAME: appTable,
        OUTBOX_PARKING_QUEUE_URL: parkingUrl,
        OUTBOX_SWEEPER_MIN_AGE_MS: String(options.sweepMinAgeMs ?? 5_000),
      }),
      execArgv,
      timeoutMs: 40_000,
    }),
    payments: createFunctionPool(
      {
        name: "payment-consumer",
        module: join(FUNCTIONS, "payment-consumer/handler.ts"),
        // Every kill of a payment environment (crash hook, random crash, timeout) is a crash that
        // may leave a charge without its completion: the accounting needs all of them.
        onKill: (pid, reason) => provider.recordCrash(pid, `payment environment ${reason}`),
        env: fnEnv({
          DEDUP_TABLE_NAME: dedupTable,
          PAYMENT_GATEWAY_URL: provider.url,
          KAFKA_RETRY_LADDER: JSON.stringify({
            topic,
            retries: delays.map((d) => ({ topic: `${topic}.retry.${fmt(d)}`, delayMs: d })),
            deadLetterTopic,
          }),
        }),
        execArgv,
        timeoutMs: 60_000,
      },
      // One environment per group member and topic (each mapping invokes one batch at a time).
      16,
    ),
  };

  const stages = new Set(options.stages ?? ["orders", "relay", "payments"]);
  const triggers: Trigger[] = [];
  if (stages.has("orders")) {
    triggers.push(
      startSqsTrigger({
        sqs,
        pool: pools.orders,
        queueUrl: ordersUrl,
        queueArn: ordersArn,
        pollers: orderConsumers,
        ...(options.onOrderInvoke ? { onInvoke: (_e, pool) => options.onOrderInvoke?.(pool) } : {}),
      }),
    );
  }
  if (stages.has("relay")) {
    triggers.push(
      startStreamTrigger({
        streams,
        streamArn,
        pool: pools.relay,
        batchSize: options.streamBatchSize ?? 100,
      }),
    );
    triggers.push(startSchedule(pools.sweeper, options.sweepEveryMs ?? 2_000));
  }
  const paymentTriggers: Array<Trigger> = [];
  const startMember = async (t: string) => {
    const trigger = await startKafkaTrigger({
      kafka,
      topic: t,
      groupId: `${p}-payment-consumer-${t}`,
      pool: pools.payments,
      onEnvironment: (event, env) => {
        // Which environment charges which order, so a crash hook can kill exactly that one.
        const orderIds: string[] = [];
        for (const records of Object.values(event.records)) {
          for (const r of records) {
            try {
              const v = JSON.parse(Buffer.from(r.value ?? "", "base64").toString("utf8")) as {
                orderId?: string;
              };
              if (typeof v.orderId === "string") orderIds.push(v.orderId);
            } catch {
              // not an order: nothing to crash for
            }
          }
        }
        for (const id of orderIds) charging.set(id, (charging.get(id) ?? new Set()).add(env));
        return () => {
          for (const id of orderIds) {
            const set = charging.get(id);
            set?.delete(env);
            if (set?.size === 0) charging.delete(id);
          }
        };
      },
    });
    return trigger;
  };
  if (stages.has("payments")) {
    for (let i = 0; i < (options.paymentMembers ?? 1); i++) paymentTriggers.push(await startMember(topic));
    for (const t of retryTopics) triggers.push(await startMember(t));
  }

  return {
    names: {
      appTable,
      dedupTable,
      ordersUrl,
      ordersArn,
      ordersDlqUrl,
      parkingUrl,
      topic,
      retryTopics,
      deadLetterTopic,
    },
    streamArn,
    provider,
    pools,
    kafka,
    sqs,
    dynamodb,
    triggers,
    async send(messages) {
      for (let i = 0; i < messages.length; i += 10) {
        const out = await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: ordersUrl,
            Entries: messages.slice(i, i + 10).map((m, j) => ({
              Id: String(j),
              MessageBody: m.body,
              ...(m.attributes ? { MessageAttributes: m.attributes } : {}),
            })),
          }),
        );
        if (out.Failed?.length) throw new Error(`send failed: ${JSON.stringify(out.Failed)}`);
      }
    },
    async ordersInQueue() {
      const a = (
        await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: ordersUrl,
            AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
          }),
        )
      ).Attributes;
      return (
        Number(a?.ApproximateNumberOfMessages ?? 0) + Number(a?.ApproximateNumberOfMessagesNotVisible ?? 0)
      );
    },
    async addPaymentMember() {
      paymentTriggers.push(await startMember(topic));
    },
    async removePaymentMember() {
      await paymentTriggers.pop()?.stop();
    },
    async stop() {
      await Promise.allSettled([...triggers, ...paymentTriggers].map((t) => t.stop()));
      await Promise.allSettled(Object.values(pools).map((pool) => pool.stop()));
      await provider.close();
      dynamodb.destroy();
      sqs.destroy();
    },
  };
}
