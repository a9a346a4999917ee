import { generateAuthToken } from "aws-msk-iam-sasl-signer-js";
import type { ISocketFactory, KafkaConfig, RetryOptions, SASLOptions } from "kafkajs";
// Every kafkajs client of the library is configured here: the request-queue fix comes with it.
import "./kafkajsRequestQueueFix.ts";
import { ConsumerConfigError } from "../core/errors.ts";

/**
 * How to reach a Kafka cluster. Everything defaults from the environment, so the same code runs on
 * MSK (IAM auth over TLS) and against the local librdkafka mock (plaintext):
 *
 * | variable         | meaning                                                          |
 * |------------------|------------------------------------------------------------------|
 * | `KAFKA_BROKERS`  | comma-separated `host:port` list (required)                      |
 * | `MSK_IAM_AUTH`   | `true` → SASL OAUTHBEARER with an MSK IAM token, over TLS        |
 * | `KAFKA_SSL`      | `true`/`false`, overrides the TLS default (on with IAM auth)      |
 * | `KAFKA_CLIENT_ID`| client id shown in broker logs @default `reliable-consumers`     |
 * | `KAFKA_IDEMPOTENT`| `false` turns the idempotent producer off (the librdkafka mock) |
 * | `AWS_REGION`     | region the IAM token is signed for                               |
 */
export interface KafkaConnectionConfig {
  /** The bootstrap brokers, `host:port` each (`KAFKA_BROKERS`). */
  readonly brokers: readonly string[];
  /** The client id brokers log (`KAFKA_CLIENT_ID`). @default "reliable-consumers" */
  readonly clientId?: string;
  /** MSK IAM auth (SASL OAUTHBEARER, token from aws-msk-iam-sasl-signer-js). @default false */
  readonly iamAuth?: boolean;
  /** Region for the IAM token. @default AWS_REGION */
  readonly region?: string;
  /** TLS. @default true with IAM auth, false otherwise */
  readonly ssl?: boolean;
  /** How long to wait for a broker connection, ms. @default 3000 ms */
  readonly connectionTimeoutMs?: number;
  /** How long to wait for a broker's answer to a request, ms. @default 10000 ms */
  readonly requestTimeoutMs?: number;
  /**
   * The cluster supports the idempotent producer (InitProducerId). MSK and Apache Kafka do; the
   * librdkafka mock does not, and the local emulators set `KAFKA_IDEMPOTENT=false` for it.
   * @default true
   */
  readonly idempotent?: boolean;
  /** kafkajs retry policy for every request. @default see DEFAULT_RETRY */
  readonly retry?: RetryOptions;
  /**
   * kafkajs socket factory, for fault injection in tests (closing sockets mid-flight). Not part of
   * the cache key: use createKafkaProducer, not getKafkaProducer, with it.
   */
  readonly socketFactory?: ISocketFactory;
}

/**
 * kafkajs retries each request with exponential backoff and jitter (its own factor/multiplier).
 * Bounded so a dead cluster fails a send in well under a Lambda timeout instead of hanging it:
 * ~300 ms, 600 ms, 1.2 s, 2.4 s, 4.8 s → about 9 s worst case before the error surfaces.
 */
export const DEFAULT_RETRY: RetryOptions = {
  initialRetryTime: 300,
  maxRetryTime: 5_000,
  retries: 5,
  factor: 0.2,
  multiplier: 2,
};

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim());

/** Reads `KAFKA_BROKERS`, `MSK_IAM_AUTH`, `KAFKA_SSL`, `KAFKA_CLIENT_ID`, `KAFKA_IDEMPOTENT`, `AWS_REGION`. */
export function kafkaConfigFromEnv(env: NodeJS.ProcessEnv = process.env): KafkaConnectionConfig {
  const brokers = (env.KAFKA_BROKERS ?? "")
    .split(",")
    .map((b) => b.trim())
    .filter(Boolean);
  if (brokers.length === 0) {
    throw new ConsumerConfigError("KAFKA_BROKERS is not set: expected a comma-separated list of host:port");
  }
  const iamAuth = truthy(env.MSK_IAM_AUTH);
  return {
    brokers,
    iamAuth,
    ...(env.KAFKA_CLIENT_ID ? { clientId: env.KAFKA_CLIENT_ID } : {}),
    ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}),
    ...(env.KAFKA_SSL !== undefined ? { ssl: truthy(env.KAFKA_SSL) } : {}),
    ...(env.KAFKA_IDEMPOTENT !== undefined ? { idempotent: truthy(env.KAFKA_IDEMPOTENT) } : {}),
  };
}

/**
 * The MSK IAM SASL mechanism. kafkajs calls the provider on every (re)authentication; MSK reports
 * the token's lifetime (15 min) as the SASL session lifetime, and kafkajs re-authenticates before
 * it ends (`reauthenticationThreshold`), so a long-lived cached connection keeps a fresh token.
 */
export function mskIamSasl(region: string): SASLOptions {
  return {
    mechanism: "oauthbearer",
    oauthBearerProvider: async () => {
      const { token } = await generateAuthToken({ region });
      return { value: token };
    },
  };
}

/** The kafkajs client config for a connection config. */
export function toKafkaJsConfig(config: KafkaConnectionConfig): KafkaConfig {
  const iamAuth = config.iamAuth ?? false;
  const region = config.region ?? process.env.AWS_REGION;
  if (iamAuth && !region)
    throw new ConsumerConfigError("MSK IAM auth needs a region (AWS_REGION or config.region)");
  return {
    clientId: config.clientId ?? "reliable-consumers",
    brokers: [...config.brokers],
    ssl: config.ssl ?? iamAuth,
    ...(iamAuth && region ? { sasl: mskIamSasl(region) } : {}),
    connectionTimeout: config.connectionTimeoutMs ?? 3_000,
    requestTimeout: config.requestTimeoutMs ?? 10_000,
    retry: config.retry ?? DEFAULT_RETRY,
    ...(config.socketFactory ? { socketFactory: config.socketFactory } : {}),
  };
}

/** A stable identity for caching: two equal configs share one connection. */
export function configCacheKey(config: KafkaConnectionConfig): string {
  return JSON.stringify({
    b: [...config.brokers].sort(),
    c: config.clientId ?? "reliable-consumers",
    i: config.iamAuth ?? false,
    r: config.iamAuth ? (config.region ?? process.env.AWS_REGION) : undefined,
    s: config.ssl,
    id: config.idempotent ?? true,
    ct: config.connectionTimeoutMs,
    rt: config.requestTimeoutMs,
    re: config.retry,
  });
}
