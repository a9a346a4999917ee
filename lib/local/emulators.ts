import { type DynamoDbLocal, startDynamoDbLocal } from "./dynamodbLocal.ts";
import { type KafkaMock, startKafkaMock } from "./kafkaMock.ts";
import { type SqsLocal, startSqsLocal } from "./sqsLocal.ts";

export interface Emulators {
  readonly dynamodb: DynamoDbLocal;
  readonly sqs: SqsLocal;
  readonly kafka: KafkaMock;
  /** The variables that point AWS SDK v3 clients and our Kafka module at the emulators. */
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

export const LOCAL_REGION = "us-east-1";

/** Standard SDK endpoint variables plus `KAFKA_BROKERS`; nothing in lib/ special-cases them. */
export function emulatorEnv(dynamodb: string, sqs: string, kafkaBrokers: string[]): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_DYNAMODB: dynamodb,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: dynamodb,
    AWS_ENDPOINT_URL_SQS: sqs,
    AWS_REGION: LOCAL_REGION,
    AWS_DEFAULT_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
    KAFKA_BROKERS: kafkaBrokers.join(","),
  };
}

/** Starts all three emulators in parallel and exports their endpoints into `process.env`. */
export async function startEmulators(options: { applyEnv?: boolean } = {}): Promise<Emulators> {
  const started = await Promise.allSettled([startDynamoDbLocal(), startSqsLocal(), startKafkaMock()]);
  const failure = started.find((s) => s.status === "rejected");
  if (failure) {
    await Promise.all(started.map((s) => (s.status === "fulfilled" ? s.value.stop() : undefined)));
    throw (failure as PromiseRejectedResult).reason;
  }
  const [dynamodb, sqs, kafka] = started.map((s) => (s as PromiseFulfilledResult<unknown>).value) as [
    DynamoDbLocal,
    SqsLocal,
    KafkaMock,
  ];
  const env = emulatorEnv(dynamodb.endpoint, sqs.endpoint, kafka.brokers);
  if (options.applyEnv !== false) Object.assign(process.env, env);
  return {
    dynamodb,
    sqs,
    kafka,
    env,
    stop: async () => {
      await Promise.allSettled([dynamodb.stop(), sqs.stop(), kafka.stop()]);
    },
  };
}
