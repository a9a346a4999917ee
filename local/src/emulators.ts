import { startDynamoDbLocal } from "./services/dynamodb/emulator.ts";
import { type KafkaCluster, startKafkaCluster } from "./services/kafka/cluster.ts";
import { startKafkaMock } from "./services/kafka/mock.ts";
import { startKinesisLocal } from "./services/kinesis/emulator.ts";
import { startSqsLocal } from "./services/sqs/emulator.ts";
import { EMBEDDED_IDENTITY, hasUpstream, type Upstreams, upstreamIdentity } from "./upstreams.ts";

/**
 * What stands in for MSK:
 * - `mock`: librdkafka's mock cluster (kcat). Starts in a second, needs only `kcat`; but no
 *   CreateTopics (every topic gets 4 partitions), no idempotent producer, no real replication, and
 *   a group join pauses ~9 s. The default for `npm run local` and `npm run emulators` on a laptop.
 * - `real`: Apache Kafka 4 in KRaft mode (kafkaCluster.ts): one broker, or three with RF 3 and
 *   `min.insync.replicas=2`. The tests, the chaos suite and the benchmarks run on it.
 */
export type KafkaSubstrate = "mock" | "real";

/** The Kafka in use: one we started (the mock or a real cluster), or brokers the user runs. */
export interface LocalKafka {
  /** What stands in for MSK (`real` for brokers the user runs). */
  readonly substrate: KafkaSubstrate;
  /** false: brokers the user runs (`upstreams.kafkaBrokers`), never stopped by us. */
  readonly embedded: boolean;
  /** `127.0.0.1:<port>` of each broker. */
  readonly brokers: string[];
  /** The real cluster's handle (broker stop/start for chaos), when `substrate` is `real`. */
  readonly cluster?: KafkaCluster;
  /** Stops the brokers we started; does nothing for the user's. */
  stop(): Promise<void>;
}

/** An AWS service endpoint in use: one we started, or one the user runs (never stopped by us). */
export interface ServiceEndpoint {
  /** The URL an SDK client takes as `endpoint`: `http://127.0.0.1:<port>` for ours. */
  readonly endpoint: string;
  /** true: an emulator we started (DynamoDB Local, fauxqs); false: the user's, from `upstreams`. */
  readonly embedded: boolean;
  /** Stops the emulator if we started it; does nothing for the user's. */
  stop(): Promise<void>;
}

/**
 * The emulators `startEmulators` started, with the environment that points the SDKs and Kafka
 * clients at them.
 */
export interface Emulators {
  /** DynamoDB, and the endpoint of its Streams (the same for DynamoDB Local and LocalStack). */
  readonly dynamodb: ServiceEndpoint & { readonly streamsEndpoint: string };
  /** SQS: fauxqs, or the user's. */
  readonly sqs: ServiceEndpoint;
  /** Kinesis: kinesis-local, when started (`EmulatorOptions.kinesis`). */
  readonly kinesis: (ServiceEndpoint & { readonly startMs: number }) | undefined;
  /** Kafka: the substrate, its brokers' addresses, and the real cluster's handle. */
  readonly kafka: LocalKafka;
  /**
   * The variables that point AWS SDK v3 clients and our Kafka module at the emulators
   * (`AWS_ENDPOINT_URL_*`, `AWS_REGION`, credentials, `KAFKA_BROKERS`, `KAFKA_IDEMPOTENT`).
   */
  readonly env: Record<string, string>;
  /** Stops every emulator we started (the user's keep running); `process.env` is left as it is. */
  stop(): Promise<void>;
}

/** What `startEmulators` starts: the Kafka substrate and size, and which services are the user's own. */
export interface EmulatorOptions {
  /** Export the endpoints (`Emulators.env`) into `process.env`. @default true */
  readonly applyEnv?: boolean;
  /** What stands in for MSK: librdkafka's mock or a real Apache Kafka. @default "mock" */
  readonly kafka?: KafkaSubstrate;
  /** Brokers of the real cluster (1, or 3 with RF 3 and min ISR 2). @default 1 */
  readonly kafkaBrokers?: 1 | 3;
  /**
   * Services the user already runs (upstreams.ts: `--endpoint-url`, `AWS_ENDPOINT_URL*`,
   * `--kafka-brokers`), used instead of starting ours, each on its own; with any of them, the
   * region and credentials are the user's (`upstreamIdentity`). @default none: all embedded
   */
  readonly upstreams?: Upstreams;
  /** DynamoDB Local with full JIT (`DynamoDbLocalOptions.fullJit`), for benchmarks. @default false */
  readonly fullJit?: boolean;
  /** Start kinesis-local for Kinesis Data Streams (about 1 s and one Node process). @default true */
  readonly kinesis?: boolean;
}

/** The region the emulators and the local runtime use. */
export const LOCAL_REGION = EMBEDDED_IDENTITY.region;

/** Reads a `--kafka mock|real` flag (or `--kafka=real`); `fallback` when absent. */
export function kafkaSubstrateFromArgs(
  argv: readonly string[],
  fallback: KafkaSubstrate = "mock",
): KafkaSubstrate {
  const i = argv.findIndex((a) => a === "--kafka" || a.startsWith("--kafka="));
  if (i < 0) return fallback;
  const value = argv[i]?.includes("=") ? argv[i]?.split("=")[1] : argv[i + 1];
  if (value !== "mock" && value !== "real") throw new Error(`--kafka takes 'mock' or 'real', got '${value}'`);
  return value;
}

/**
 * Standard SDK endpoint variables plus `KAFKA_BROKERS` and `KAFKA_IDEMPOTENT` (false only on the
 * mock, which has no idempotent producer); nothing in lib/ special-cases them.
 */
export function emulatorEnv(
  dynamodb: string,
  sqs: string,
  kafkaBrokers: readonly string[],
  kafkaIdempotent = true,
  dynamodbStreams = dynamodb,
): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_DYNAMODB: dynamodb,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: dynamodbStreams,
    AWS_ENDPOINT_URL_SQS: sqs,
    AWS_REGION: LOCAL_REGION,
    AWS_DEFAULT_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: EMBEDDED_IDENTITY.accessKeyId,
    AWS_SECRET_ACCESS_KEY: EMBEDDED_IDENTITY.secretAccessKey,
    KAFKA_BROKERS: kafkaBrokers.join(","),
    KAFKA_IDEMPOTENT: String(kafkaIdempotent),
  };
}

/** Starts the chosen Kafka substrate (`fullJit`: the real brokers at full speed, for benchmarks). */
export async function startLocalKafka(
  substrate: KafkaSubstrate,
  brokers: 1 | 3 = 1,
  options: { fullJit?: boolean } = {},
): Promise<LocalKafka> {
  if (substrate === "mock") {
    const mock = await startKafkaMock();
    return { substrate, embedded: true, brokers: mock.brokers, stop: () => mock.stop() };
  }
  const cluster = await startKafkaCluster({ brokers, ...options });
  return { substrate, embedded: true, brokers: cluster.brokers, cluster, stop: () => cluster.stop() };
}

const embedded = (e: { endpoint: string; stop(): Promise<void> }): ServiceEndpoint => ({
  endpoint: e.endpoint,
  embedded: true,
  stop: () => e.stop(),
});
const theirs = (endpoint: string): ServiceEndpoint => ({ endpoint, embedded: false, stop: async () => {} });

/**
 * Starts the emulators in parallel (each one the user does not run already, see `upstreams`) and
 * exports their endpoints into `process.env`.
 */
export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const substrate = options.kafka ?? "mock";
  const up = options.upstreams ?? {};
  const kafkaBrokers = up.kafkaBrokers?.brokers;
  // kinesis-local is a Node process, light beside the JVMs: it starts alongside them.
  const kinesisStart = ((options.kinesis ?? true) ? startKinesisLocal() : Promise.resolve(undefined)).then(
    (k) => (k ? { ...embedded(k), startMs: k.startMs } : undefined),
  );
  // The real cluster's JVMs start after DynamoDB Local's: on two cores, up to five JVMs starting at
  // once starve one another past their start timeouts. The mock (kcat) starts alongside.
  const first = await Promise.allSettled([
    up.dynamodb
      ? theirs(up.dynamodb.url)
      : startDynamoDbLocal({ fullJit: options.fullJit ?? false }).then(embedded),
    up.sqs ? theirs(up.sqs.url) : startSqsLocal().then(embedded),
    ...(kafkaBrokers
      ? [
          {
            substrate: "real",
            embedded: false,
            brokers: [...kafkaBrokers],
            stop: async () => {},
          } as LocalKafka,
        ]
      : substrate === "mock"
        ? [startLocalKafka("mock")]
        : []),
  ]);
  const started =
    kafkaBrokers || substrate === "mock" || first.some((s) => s.status === "rejected")
      ? first
      : [...first, ...(await Promise.allSettled([startLocalKafka("real", options.kafkaBrokers ?? 1)]))];
  const [kinesisStarted] = await Promise.allSettled([kinesisStart]);
  const failure = [...started, kinesisStarted].find((s) => s.status === "rejected");
  if (failure) {
    await Promise.all(
      [...started, kinesisStarted].map((s) => (s.status === "fulfilled" ? s.value?.stop() : undefined)),
    );
    throw (failure as PromiseRejectedResult).reason;
  }
  const kinesis = (kinesisStarted as PromiseFulfilledResult<Emulators["kinesis"]>).value;
  const [ddb, sqs, kafka] = started.map((s) => (s as PromiseFulfilledResult<unknown>).value) as [
    ServiceEndpoint,
    ServiceEndpoint,
    LocalKafka,
  ];
  const dynamodb = { ...ddb, streamsEndpoint: up.dynamodbStreams?.url ?? ddb.endpoint };
  const env = {
    ...emulatorEnv(
      dynamodb.endpoint,
      sqs.endpoint,
      kafka.brokers,
      kafka.substrate === "real",
      dynamodb.streamsEndpoint,
    ),
    ...(kinesis ? { AWS_ENDPOINT_URL_KINESIS: kinesis.endpoint } : {}),
    ...(hasUpstream(up) ? upstreamIdentity() : {}),
  };
  if (options.applyEnv !== false) Object.assign(process.env, env);
  return {
    dynamodb,
    sqs,
    kafka,
    kinesis,
    env,
    stop: async () => {
      await Promise.allSettled([dynamodb.stop(), sqs.stop(), kafka.stop(), kinesis?.stop()]);
    },
  };
}
