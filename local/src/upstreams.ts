/**
 * Where the local runtime's services come from: emulators the user already runs (LocalStack, any
 * other that speaks the AWS APIs, an AWS account), or, for each service not given, our embedded
 * one (DynamoDB Local, fauxqs, our Kafka). Resolved per service, so they mix: SQS on LocalStack
 * with DynamoDB Local, say. The functions still run in our runtime, with its trigger semantics.
 */
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { ListQueuesCommand } from "@aws-sdk/client-sqs";
import { Kafka, logLevel } from "kafkajs";
// The library's kafkajs 2.2.4 fixes are side effects of its Kafka entry point (lib/kafka/config.ts).
import "reliable-consumers/kafka";
import { createSqsClient } from "reliable-consumers/sqs";

/** A service the user runs: its endpoint, and where we read it from (for messages). */
export interface Upstream {
  readonly url: string;
  /** `--endpoint-url`, `AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL`, `--kafka-brokers`... */
  readonly from: string;
}

/** Each absent service is started by us. */
export interface Upstreams {
  readonly sqs?: Upstream;
  readonly dynamodb?: Upstream;
  /** Always given together with `dynamodb`: a stream comes from its table's emulator. */
  readonly dynamodbStreams?: Upstream;
  /** `host:port` of each bootstrap broker. */
  readonly kafkaBrokers?: { readonly brokers: readonly string[]; readonly from: string };
}

/** An endpoint the user named (flag or variable) that is malformed or does not answer: the CLI exits 3 with it. */
export class UpstreamError extends Error {
  override readonly name = "UpstreamError";
}

/** The services, by their AWS CLI variable (`AWS_ENDPOINT_URL_<service id>`). */
const SERVICES = {
  sqs: "AWS_ENDPOINT_URL_SQS",
  dynamodb: "AWS_ENDPOINT_URL_DYNAMODB",
  dynamodbStreams: "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
} as const;

function checkedUrl(url: string, from: string): Upstream {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UpstreamError(`${from}: '${url}' is not a URL (e.g. http://localhost:4566)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new UpstreamError(`${from}: '${url}' is not an http(s) URL`);
  return { url: url.replace(/\/+$/, ""), from };
}

/**
 * Resolves the upstreams as the AWS CLI resolves endpoints: `--endpoint-url` for every service;
 * else `AWS_ENDPOINT_URL_<SERVICE>`, else `AWS_ENDPOINT_URL`; none from the environment when
 * `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`. (Endpoints in ~/.aws/config profiles are not read.)
 * One departure: DynamoDB Streams without an endpoint of its own follows DynamoDB's, since a
 * stream only exists on the emulator that holds its table. Kafka is ours unless `kafkaBrokers`
 * (`--kafka-brokers`) names brokers.
 */
export function resolveUpstreams(
  flags: { readonly endpointUrl?: string; readonly kafkaBrokers?: string },
  env: Readonly<Record<string, string | undefined>> = process.env,
): Upstreams {
  const ignoreEnv = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?.toLowerCase() === "true";
  const fromEnv = (variable: string): Upstream | undefined => {
    if (ignoreEnv) return undefined;
    const own = env[variable];
    if (own) return checkedUrl(own, variable);
    return env.AWS_ENDPOINT_URL ? checkedUrl(env.AWS_ENDPOINT_URL, "AWS_ENDPOINT_URL") : undefined;
  };
  const pick = (variable: string) =>
    flags.endpointUrl ? checkedUrl(flags.endpointUrl, "--endpoint-url") : fromEnv(variable);
  const sqs = pick(SERVICES.sqs);
  const dynamodb = pick(SERVICES.dynamodb);
  const ownStreams =
    !flags.endpointUrl && !ignoreEnv && env[SERVICES.dynamodbStreams]
      ? checkedUrl(env[SERVICES.dynamodbStreams]!, SERVICES.dynamodbStreams)
      : undefined;
  if (ownStreams && !dynamodb)
    throw new UpstreamError(
      `${SERVICES.dynamodbStreams} is set but DynamoDB would be the embedded DynamoDB Local: a table's stream ` +
        `comes from the emulator that holds the table. Set ${SERVICES.dynamodb} too, or unset ${SERVICES.dynamodbStreams}.`,
    );
  const brokers = flags.kafkaBrokers
    ?.split(",")
    .map((b) => b.trim())
    .filter(Boolean);
  if (flags.kafkaBrokers !== undefined && !brokers?.length)
    throw new UpstreamError("--kafka-brokers takes host:port[,host:port...]");
  for (const b of brokers ?? [])
    if (!/^[^\s:/]+:\d+$/.test(b)) throw new UpstreamError(`--kafka-brokers: '${b}' is not host:port`);
  return {
    ...(sqs ? { sqs } : {}),
    ...(dynamodb ? { dynamodb, dynamodbStreams: ownStreams ?? dynamodb } : {}),
    ...(brokers?.length ? { kafkaBrokers: { brokers, from: "--kafka-brokers" } } : {}),
  };
}

export const hasUpstream = (u: Upstreams): boolean => Boolean(u.sqs || u.dynamodb || u.kafkaBrokers);

/** The region and credentials of the embedded emulators (which take any). */
export const EMBEDDED_IDENTITY = {
  region: "us-east-1",
  accessKeyId: "local",
  secretAccessKey: "local",
} as const;

/**
 * Region and credentials for services the user runs: their own (AWS_REGION or AWS_DEFAULT_REGION,
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), which is what their LocalStack or
 * account expects; ours where they set none. The embedded emulators take any.
 */
export function upstreamIdentity(
  env: Readonly<Record<string, string | undefined>> = process.env,
  fallback: {
    readonly region: string;
    readonly accessKeyId: string;
    readonly secretAccessKey: string;
  } = EMBEDDED_IDENTITY,
): Record<string, string> {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? fallback.region;
  const keyed = Boolean(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY);
  return {
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: keyed ? env.AWS_ACCESS_KEY_ID! : fallback.accessKeyId,
    AWS_SECRET_ACCESS_KEY: keyed ? env.AWS_SECRET_ACCESS_KEY! : fallback.secretAccessKey,
    ...(keyed && env.AWS_SESSION_TOKEN ? { AWS_SESSION_TOKEN: env.AWS_SESSION_TOKEN } : {}),
  };
}

/** One line per service: where it comes from (for the CLI's start message). */
export function describeUpstreams(u: Upstreams): string[] {
  return [
    u.sqs ? `SQS at ${u.sqs.url} (${u.sqs.from})` : "SQS: fauxqs (embedded)",
    u.dynamodb
      ? `DynamoDB at ${u.dynamodb.url} (${u.dynamodb.from})` +
        (u.dynamodbStreams && u.dynamodbStreams.url !== u.dynamodb.url
          ? `, its Streams at ${u.dynamodbStreams.url} (${u.dynamodbStreams.from})`
          : "")
      : "DynamoDB and Streams: DynamoDB Local (embedded)",
    u.kafkaBrokers
      ? `Kafka at ${u.kafkaBrokers.brokers.join(",")} (${u.kafkaBrokers.from})`
      : "Kafka: embedded",
  ];
}

/**
 * Fails fast, naming the service, the URL and where it was read from, when a service the user
 * runs does not answer: before anything is synthesized or started.
 */
export async function checkUpstreams(
  u: Upstreams,
  identity: Readonly<Record<string, string>>,
  timeoutMs = 10_000,
): Promise<void> {
  const credentials = {
    accessKeyId: identity.AWS_ACCESS_KEY_ID!,
    secretAccessKey: identity.AWS_SECRET_ACCESS_KEY!,
    ...(identity.AWS_SESSION_TOKEN ? { sessionToken: identity.AWS_SESSION_TOKEN } : {}),
  };
  const region = identity.AWS_REGION!;
  const failures: string[] = [];
  const probe = async (what: string, up: Upstream | undefined, call: (url: string) => Promise<unknown>) => {
    if (!up) return;
    try {
      await call(up.url);
    } catch (error) {
      const e = error as Error & { code?: string };
      failures.push(`${what} at ${up.url} (${up.from}) does not answer: ${e.code ?? e.name}: ${e.message}`);
    }
  };
  const abort = () => AbortSignal.timeout(timeoutMs);
  await Promise.all([
    probe("SQS", u.sqs, async (endpoint) => {
      const sqs = createSqsClient({ endpoint, region, credentials, maxAttempts: 1 });
      try {
        await sqs.send(new ListQueuesCommand({ MaxResults: 1 }), { abortSignal: abort() });
      } finally {
        sqs.destroy();
      }
    }),
    probe("DynamoDB", u.dynamodb, async (endpoint) => {
      const ddb = new DynamoDBClient({ endpoint, region, credentials, maxAttempts: 1 });
      try {
        await ddb.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: abort() });
      } finally {
        ddb.destroy();
      }
    }),
    u.kafkaBrokers
      ? probe("Kafka", { url: u.kafkaBrokers.brokers.join(","), from: u.kafkaBrokers.from }, async () => {
          const admin = new Kafka({
            clientId: "reliable-consumers-local-check",
            brokers: [...u.kafkaBrokers!.brokers],
            logLevel: logLevel.NOTHING,
            connectionTimeout: timeoutMs,
            retry: { retries: 1 },
          }).admin();
          try {
            await admin.connect();
            await admin.describeCluster();
          } finally {
            await admin.disconnect();
          }
        })
      : undefined,
  ]);
  if (failures.length)
    throw new UpstreamError(
      `${failures.join("\n")}\nStart it, fix the URL, or unset the variable to use the embedded emulator.`,
    );
}
