import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DeleteQueueCommand,
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { Kafka, logLevel } from "kafkajs";
// kafkajs 2.2.4 warns TimeoutNegativeWarning on every connection without it (see the file).
import "../lib/kafka/kafkajsRequestQueueFix.ts";
import { createSqsClient } from "reliable-consumers/sqs";
import type { Denial, RuntimeClient } from "reliable-consumers-local";
import { type LocalRuntime, startLocalRuntime, synthesize } from "reliable-consumers-local";
import { type CfnTemplate, loadCloudAssembly } from "../local/src/runtime/cloudAssembly.ts";
import type { KafkaMapping } from "../local/src/runtime/model.ts";
import type { EventSource } from "../local/src/services/sqs/eventSource.ts";
import { queueDepth } from "../local/src/services/sqs/queueDepth.ts";
import { type ScenarioTargets, scenarioTargets } from "../scenario/referenceScenario.ts";
import { CHAOS_STACK, CHAOS_TOPIC } from "./chaosApp.ts";
import { REDIRECT_ENV, type RedirectMap, redirectingSocketFactory } from "./netRedirect.ts";
import { type CrashDecision, type PaymentProvider, startPaymentProvider } from "./paymentProvider.ts";

/**
 * The reference service for chaos: the CDK app (chaos/chaosApp.ts, the reference stack with
 * fast-recovery props) synthesized once, then materialised and run on the local runtime
 * (local/src/runtime) once per scenario, under its own names. Faults enter through the runtime's
 * hooks: the functions' endpoints (`functionEmulatorEnv`, a fault proxy), the runtime's own SDK
 * clients (`instrument`), Kafka connections (`kafkaSocketFactory` for the runtime, a `preload` of
 * netRedirect.ts inside each function environment), and crashes of busy environments.
 */
export interface Endpoints {
  readonly dynamodb: string;
  readonly sqs: string;
  readonly kafkaBrokers: readonly string[];
  /** kinesis-local (the order-activity stream of activity-consumer). */
  readonly kinesis: string;
}

/** The synthesized chaos variant of the CDK app. */
export interface ChaosAssembly {
  readonly template: CfnTemplate;
  readonly assetRoot: string;
  /** The cloud assembly directory, when synthesizeChaosApp made it (removed by disposeChaosApp). */
  readonly tempDir?: string;
}

// chaos/ sits at the project root (it was lib/chaos before the layout move).
const PROJECT_DIR = resolve(fileURLToPath(new URL("../", import.meta.url)));
const PRELOAD = fileURLToPath(new URL("./netRedirect.ts", import.meta.url));

/** Synthesizes chaos/chaosApp.ts (bundling included: ~30 s); once per chaos run. */
export async function synthesizeChaosApp(outdir?: string): Promise<ChaosAssembly> {
  const dir = outdir ?? mkdtempSync(join(tmpdir(), "chaos-cdk-"));
  try {
    await synthesize({ projectDir: PROJECT_DIR, outdir: dir, app: "npx tsx chaos/chaosApp.ts" });
    const stack = loadCloudAssembly(dir).find((s) => s.stackName === CHAOS_STACK);
    if (!stack) throw new Error(`no ${CHAOS_STACK} in ${dir}`);
    return { template: stack.template, assetRoot: stack.assetRoot, ...(outdir ? {} : { tempDir: dir }) };
  } catch (error) {
    if (!outdir) rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Removes the temporary cloud assembly (bundles included) once no scenario needs it. */
export function disposeChaosApp(assembly: ChaosAssembly | undefined): void {
  if (assembly?.tempDir) rmSync(assembly.tempDir, { recursive: true, force: true });
}

/**
 * The template of one run: its own topics and consumer groups (the runtime's `namePrefix` covers
 * queues, tables and functions; Kafka names come from the template).
 */
function templateForRun(
  assembly: ChaosAssembly,
  prefix: string,
  relayMapping?: ChaosServiceOptions["relayMapping"],
): CfnTemplate {
  const text = JSON.stringify(assembly.template)
    .replaceAll(CHAOS_TOPIC, `${prefix}-order-events`)
    .replaceAll('"ConsumerGroupId":"', `"ConsumerGroupId":"${prefix}-`)
    // The groups' IAM grants follow them (the local runtime enforces kafka-cluster:*Group on them).
    .replace(/(:group\/[^/"]+\/[^/"]+\/)/g, `$1${prefix}-`);
  const template = JSON.parse(text) as CfnTemplate;
  if (relayMapping) {
    // The relay's mapping is the one on a DynamoDB stream (StartingPosition, EventSourceArn = a StreamArn).
    for (const r of Object.values(template.Resources ?? {})) {
      const p = r.Properties as Record<string, unknown> | undefined;
      if (
        r.Type !== "AWS::Lambda::EventSourceMapping" ||
        !p ||
        !JSON.stringify(p.EventSourceArn ?? "").includes("StreamArn")
      )
        continue;
      if (relayMapping.maximumRetryAttempts !== undefined)
        p.MaximumRetryAttempts = relayMapping.maximumRetryAttempts;
      if (relayMapping.maximumRecordAgeSeconds !== undefined)
        p.MaximumRecordAgeInSeconds = relayMapping.maximumRecordAgeSeconds;
    }
  }
  return template;
}

export interface ChaosServiceOptions {
  readonly assembly: ChaosAssembly;
  /** Unique per run: prefixes every table, queue, function, topic and consumer group. */
  readonly prefix: string;
  /** The emulators: the runtime's own clients and the checks go here. */
  readonly direct: Endpoints;
  /** Where the functions' SDK clients go instead (a fault proxy, a TCP proxy...). @default direct */
  readonly functionEndpoints?: Partial<Pick<Endpoints, "dynamodb" | "sqs">>;
  /** Kafka broker address → proxy address, for the functions and the runtime's Kafka clients. */
  readonly kafkaRedirect?: RedirectMap;
  /** Called with each SDK client of the runtime (SDK fault injection). */
  readonly instrument?: (client: RuntimeClient) => void;
  /** Per charge: crash the charging payment environment before or after the charge. */
  readonly crashDecision?: (orderId: string) => CrashDecision;
  /** While true, the payment provider answers 503 to every charge (a provider outage). */
  readonly providerUnavailable?: () => boolean;
  /** The sweeper's minimum event age. @default 10 000 ms */
  readonly sweepMinAgeMs?: number;
  /**
   * payment-consumer's dedup lease (its `DEDUP_LEASE_MS`) for this run: how long a claim a killed
   * environment left blocks the redelivery of its record. @default the store's, 30 000 ms
   */
  readonly paymentLeaseMs?: number;
  /** Limits of the relay's stream mapping for this run (how soon it gives up on a failing batch). @default the template's */
  readonly relayMapping?: {
    readonly maximumRetryAttempts?: number;
    readonly maximumRecordAgeSeconds?: number;
  };
}

export interface ChaosService {
  readonly runtime: LocalRuntime;
  readonly targets: ScenarioTargets;
  readonly names: {
    appTable: string;
    ordersUrl: string;
    ordersDlqUrl: string;
    parkingUrl: string;
    reportsUrl: string;
    topic: string;
    deadLetterTopic: string;
    /** The order-activity Kinesis stream (2 shards) of activity-consumer. */
    activityStreamArn: string;
    activityStreamName: string;
    /** activity-consumer's trigger queue: its parking queue (`DLQ_URL`) and the mapping's on-failure destination. */
    activityParkingUrl: string;
  };
  readonly functions: Record<"orders" | "relay" | "payments" | "reports" | "activity", string>;
  readonly provider: PaymentProvider;
  /** Clients on the emulators directly, for sends and checks. */
  readonly kafka: Kafka;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  send(
    messages: ReadonlyArray<{ body: string; attributes?: Record<string, MessageAttributeValue> }>,
    queueUrl?: string,
  ): Promise<void>;
  /** Visible + in-flight messages of a queue (the orders queue by default). */
  inQueue(queueUrl?: string): Promise<number>;
  /** One more member of payment-consumer's group on the main topic (a rebalance). */
  addPaymentMember(): Promise<void>;
  /** The newest added member leaves (a rebalance). */
  removePaymentMember(): Promise<void>;
  stop(): Promise<void>;
}

/** The order ids in an MSK event (which orders a payment environment is charging). */
function orderIdsOf(event: unknown): string[] {
  const ids: string[] = [];
  const records = (event as { records?: Record<string, Array<{ value?: string }>> } | null)?.records ?? {};
  for (const list of Object.values(records)) {
    for (const r of list) {
      try {
        const v = JSON.parse(Buffer.from(r.value ?? "", "base64").toString("utf8")) as { orderId?: unknown };
        if (typeof v.orderId === "string") ids.push(v.orderId);
      } catch {
        // not an order: nothing to crash for
      }
    }
  }
  return ids;
}

const denied: Denial[] = [];
/** Every call the chaos runs' functions were denied so far (the verdict requires none). */
export const chaosDenials = (): readonly Denial[] => denied;

export async function startChaosService(options: ChaosServiceOptions): Promise<ChaosService> {
  const p = options.prefix;
  const region = "us-east-1";
  const credentials = { accessKeyId: "local", secretAccessKey: "local" };
  const dir = mkdtempSync(join(tmpdir(), `${p}-`));
  let runtime: LocalRuntime | undefined;
  let paymentsFn = "";
  const charging = (orderId: string) =>
    runtime && paymentsFn
      ? runtime.host.busyEnvironments(paymentsFn).filter((e) => orderIdsOf(e.event).includes(orderId))
      : [];
  // A killed environment's last requests can still reach the provider a few ms after the kill
  // (they were on the wire): for a while, it still counts among the callers of its orders.
  const crashed: Array<{ id: string; orderIds: string[]; at: number }> = [];
  const callers = (orderId: string) => {
    const now = Date.now();
    while (crashed.length && now - crashed[0]!.at > 2_000) crashed.shift();
    return [
      ...charging(orderId).map((e) => e.id),
      ...crashed.filter((c) => c.orderIds.includes(orderId)).map((c) => c.id),
    ];
  };
  const provider = await startPaymentProvider({
    ledgerFile: join(dir, "charges.jsonl"),
    ...(options.crashDecision ? { decide: options.crashDecision } : {}),
    ...(options.providerUnavailable ? { unavailable: options.providerUnavailable } : {}),
    // The host's onCrash records each kill in the ledger before the next charge can happen.
    killCaller: (orderId) => {
      const envs = charging(orderId);
      for (const e of envs) e.kill(`crash hook for ${orderId}`);
      return envs.length > 0;
    },
    callers,
  });
  const fnEnv: Record<string, string> = {
    AWS_ENDPOINT_URL_DYNAMODB: options.functionEndpoints?.dynamodb ?? options.direct.dynamodb,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: options.functionEndpoints?.dynamodb ?? options.direct.dynamodb,
    AWS_ENDPOINT_URL_SQS: options.functionEndpoints?.sqs ?? options.direct.sqs,
    ...(options.kafkaRedirect ? { [REDIRECT_ENV]: JSON.stringify(options.kafkaRedirect) } : {}),
  };
  try {
    runtime = await startLocalRuntime({
      template: templateForRun(options.assembly, p, options.relayMapping),
      assetRoot: options.assembly.assetRoot,
      stackName: CHAOS_STACK,
      namePrefix: `${p}-`,
      emulatorEnv: {
        AWS_ENDPOINT_URL_DYNAMODB: options.direct.dynamodb,
        AWS_ENDPOINT_URL_DYNAMODB_STREAMS: options.direct.dynamodb,
        AWS_ENDPOINT_URL_SQS: options.direct.sqs,
        AWS_ENDPOINT_URL_KINESIS: options.direct.kinesis,
        AWS_REGION: region,
        AWS_DEFAULT_REGION: region,
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        KAFKA_BROKERS: options.direct.kafkaBrokers.join(","),
      },
      functionEmulatorEnv: fnEnv,
      ...(options.kafkaRedirect
        ? { preload: [PRELOAD], kafkaSocketFactory: redirectingSocketFactory(options.kafkaRedirect) }
        : {}),
      ...(options.instrument ? { instrument: options.instrument } : {}),
      envOverrides: {
        "/payment-consumer/": {
          PAYMENT_GATEWAY_URL: provider.url,
          ...(options.paymentLeaseMs !== undefined ? { DEDUP_LEASE_MS: String(options.paymentLeaseMs) } : {}),
        },
        "/outbox-sweeper/": { OUTBOX_SWEEPER_MIN_AGE_MS: String(options.sweepMinAgeMs ?? 10_000) },
      },
      logDir: join(dir, "logs"),
      // Two cores: a ceiling on worker threads per function keeps memory and CPU bounded.
      maxEnvironmentsPerFunction: 8,
      scheduleFirstRunAfterMs: 15_000,
      onCrash: (fn, environmentId, reason, event) => {
        // Every death of a payment environment may leave a charge without its completion.
        if (fn.name !== paymentsFn) return;
        crashed.push({ id: environmentId, orderIds: orderIdsOf(event), at: Date.now() });
        provider.recordCrash(environmentId, reason);
      },
    });
  } catch (error) {
    await provider.close();
    throw error;
  }
  const rt = runtime;
  rt.denials.subscribe((d) => denied.push(d));
  paymentsFn = rt.findFunction("/payment-consumer/").name;
  const targets = scenarioTargets(rt);
  const relay = rt.findFunction("/outbox-relay/");
  const parkingUrl = relay.environment.OUTBOX_PARKING_QUEUE_URL;
  if (!parkingUrl || !targets.reports)
    throw new Error("the chaos template lacks the parking or reports queue");
  const activity = rt.findFunction("/activity-consumer/");
  const activityStream = rt.app.streams[0];
  const activityParkingUrl = activity.environment.DLQ_URL;
  if (!activityStream || !activityParkingUrl)
    throw new Error(
      "the chaos template lacks the order-activity stream or activity-consumer's parking queue",
    );
  const dynamodb = new DynamoDBClient({ endpoint: options.direct.dynamodb, region, credentials });
  const sqs = createSqsClient({ endpoint: options.direct.sqs, region, credentials });
  const kafka = new Kafka({
    clientId: `${p}-checks`,
    brokers: [...options.direct.kafkaBrokers],
    logLevel: logLevel.NOTHING,
  });
  const mainMapping = targets.kafkaMappings.find(
    (m): m is KafkaMapping => m.consumerGroupId === targets.paymentGroup,
  )!;
  const added: EventSource[] = [];
  return {
    runtime: rt,
    targets,
    names: {
      appTable: targets.appTable,
      ordersUrl: targets.orders.url,
      ordersDlqUrl: targets.ordersDlq.url,
      parkingUrl,
      reportsUrl: targets.reports.url,
      topic: targets.mainTopic,
      deadLetterTopic: `${targets.mainTopic}.DLQ`,
      activityStreamArn: activityStream.arn,
      activityStreamName: activityStream.name,
      activityParkingUrl,
    },
    functions: {
      orders: rt.findFunction("/order-consumer/").name,
      relay: relay.name,
      payments: paymentsFn,
      reports: rt.findFunction("/report-worker/").name,
      activity: activity.name,
    },
    provider,
    kafka,
    sqs,
    dynamodb,
    async send(messages, queueUrl = targets.orders.url) {
      for (let i = 0; i < messages.length; i += 10) {
        const out = await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
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
    async inQueue(queueUrl = targets.orders.url) {
      const d = await queueDepth(sqs, queueUrl);
      return d.visible + d.inFlight;
    },
    async addPaymentMember() {
      added.push(await rt.addEventSource(mainMapping));
    },
    async removePaymentMember() {
      await added.pop()?.stop();
    },
    async stop() {
      await Promise.allSettled(added.map((s) => s.stop()));
      await rt.stop();
      await provider.close();
      // The run's tables and queues go with it: scenarios share the emulators, which would
      // otherwise hold every run's data until the end.
      await Promise.allSettled([
        ...rt.app.tables.map((t) => dynamodb.send(new DeleteTableCommand({ TableName: t.name }))),
        ...rt.app.queues.map((q) => sqs.send(new DeleteQueueCommand({ QueueUrl: q.url }))),
      ]);
      dynamodb.destroy();
      sqs.destroy();
      // CHAOS_KEEP_LOGS=1 keeps the functions' logs (their directory is printed).
      if (process.env.CHAOS_KEEP_LOGS) process.stderr.write(`  function logs: ${join(dir, "logs")}\n`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
}
