/**
 * What the console reads from: the running app (when there is one) and the emulators, through the
 * same SDK clients and Kafka admin a user's tools would use. Nothing here keeps its own count of
 * anything: every figure is asked of the emulators or read from the functions' telemetry.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { KinesisClient } from "@aws-sdk/client-kinesis";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { type Admin, Kafka, logLevel } from "kafkajs";
import { LAMBDA_ENV } from "reliable-consumers/cdk";
import type { KafkaConnectionConfig } from "reliable-consumers/kafka";
import { createSqsClient } from "reliable-consumers/sqs";
import type { DenialLog } from "../enforcement/denials.ts";
import type { LocalApp, LocalFunction } from "../runtime/model.ts";
import type { FunctionHost } from "../services/lambda/functionHost.ts";
import type { EventSource } from "../services/sqs/eventSource.ts";
import type { TelemetryHub } from "./telemetryHub.ts";

/** The console's inputs: an app run by `reliable-consumers local`, or the bare emulators. */
export interface ConsoleSources {
  /** The materialised app; absent under `npm run emulators` (then the views find what the emulators hold). */
  readonly app?: LocalApp;
  readonly host?: FunctionHost;
  readonly denials?: DenialLog;
  readonly telemetry?: TelemetryHub;
  readonly enforceIam?: boolean;
  /** The running event source mappings (their positions: the Kinesis view). */
  readonly eventSources?: readonly EventSource[];
  /** The emulators' own endpoints (AWS_ENDPOINT_URL_*, KAFKA_BROKERS): their inspection APIs. */
  readonly emulatorEnv: Readonly<Record<string, string>>;
  /**
   * The endpoints tools use, over `emulatorEnv` (the runtime's gateway: its queue URLs resolve
   * there, and its quotas hold for the console's sends too). @default emulatorEnv
   */
  readonly toolEnv?: Readonly<Record<string, string>>;
}

/** The SDK clients and Kafka admin of one console, made once, destroyed at stop. */
export interface ConsoleClients {
  readonly region: string;
  readonly sqs: SQSClient;
  readonly ddb: DynamoDBClient;
  /** The embedded SQS's own endpoint (fauxqs' inspection API), when SQS is set. */
  readonly sqsEmulatorEndpoint: string | undefined;
  /** The brokers, when there is a Kafka. */
  readonly kafka: KafkaConnectionConfig | undefined;
  /** Kinesis, when there is one (AWS_ENDPOINT_URL_KINESIS). */
  readonly kinesis: KinesisClient | undefined;
  admin(): Promise<Admin | undefined>;
  destroy(): Promise<void>;
}

export function consoleClients(sources: ConsoleSources): ConsoleClients {
  const env = { ...sources.emulatorEnv, ...sources.toolEnv };
  const region = env.AWS_REGION ?? sources.app?.region ?? "us-east-1";
  const at = (endpoint: string | undefined) => (endpoint ? { endpoint } : {});
  const brokers = (sources.emulatorEnv.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
  const kafka = brokers.length
    ? { brokers, idempotent: sources.emulatorEnv.KAFKA_IDEMPOTENT !== "false", clientId: "local-console" }
    : undefined;
  let admin: Promise<Admin> | undefined;
  return {
    region,
    sqs: createSqsClient({ region, ...at(env.AWS_ENDPOINT_URL_SQS ?? env.AWS_ENDPOINT_URL) }),
    ddb: new DynamoDBClient({ region, ...at(env.AWS_ENDPOINT_URL_DYNAMODB ?? env.AWS_ENDPOINT_URL) }),
    sqsEmulatorEndpoint: sources.emulatorEnv.AWS_ENDPOINT_URL_SQS ?? sources.emulatorEnv.AWS_ENDPOINT_URL,
    kafka,
    kinesis: env.AWS_ENDPOINT_URL_KINESIS
      ? new KinesisClient({ region, endpoint: env.AWS_ENDPOINT_URL_KINESIS })
      : undefined,
    admin() {
      if (!kafka) return Promise.resolve(undefined);
      admin ??= (async () => {
        const a = new Kafka({ clientId: "local-console", brokers, logLevel: logLevel.NOTHING }).admin();
        await a.connect();
        return a;
      })();
      return admin;
    },
    async destroy() {
      const a = await admin?.catch(() => undefined);
      await a?.disconnect().catch(() => undefined);
      this.sqs.destroy();
      this.ddb.destroy();
      this.kinesis?.destroy();
    },
  };
}

/** A function's dedup table and scope (DEDUP_TABLE_NAME, CONSUMER_NAME), when it has one. */
export function dedupOf(fn: LocalFunction): { table: string; scope: string } | undefined {
  const table = fn.environment[LAMBDA_ENV.dedupTableName];
  if (!table) return undefined;
  return { table, scope: fn.environment[LAMBDA_ENV.consumerName] ?? fn.name };
}

/** Queue name from its ARN or URL. */
export function queueNameOf(arnOrUrl: string): string {
  return arnOrUrl.split(/[:/]/).pop() ?? arnOrUrl;
}
