/**
 * Issue 21: Kafka with MSK's IAM semantics. A client reaches the broker through the gateway with an
 * MSK IAM token (aws-msk-iam-sasl-signer-js, SASL OAUTHBEARER, as on MSK); what its role's policies
 * do not allow is refused with Kafka's own error codes, and recorded as a denial naming the grant.
 */

import { createServer } from "node:net";
import { generateAuthTokenFromCredentialsProvider } from "aws-msk-iam-sasl-signer-js";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import "../../../lib/kafka/kafkajsRequestQueueFix.ts";
import { kafka as adminKafka } from "../../../test/support/clients.ts";
import { names } from "../../../test/support/names.ts";
import { createDenialLog } from "../../src/enforcement/denials.ts";
import {
  type AccessModel,
  type FunctionPrincipal,
  localCredentials,
} from "../../src/services/iam/accessModel.ts";
import { createIamEvaluator, type IamEvaluator } from "../../src/services/iam/iamEvaluator.ts";
import { kafkaArns } from "../../src/services/kafka/enforcement/authz.ts";
import { type KafkaGateway, startKafkaGateway } from "../../src/services/kafka/enforcement/gateway.ts";

const name = names(import.meta.url);
const CLUSTER = "arn:aws:kafka:us-east-1:111122223333:cluster/local-test/aaaa-bbbb-1";
const arns = kafkaArns(CLUSTER);
const topic = name("orders");
const other = name("other");
const group = name("group");
const denials = createDenialLog();

function principal(fn: string, statements: unknown[]): FunctionPrincipal {
  return {
    functionName: fn,
    functionArn: `arn:aws:lambda:us-east-1:000000000000:function:${fn}`,
    roleArn: `arn:aws:iam::000000000000:role/${fn}-role`,
    roleLogicalId: `${fn}Role`,
    sessionArn: `arn:aws:sts::000000000000:assumed-role/${fn}-role/${fn}`,
    accountId: "000000000000",
    policies: [{ name: `${fn}-policy`, document: { Version: "2012-10-17", Statement: statements } }],
    unknownManagedPolicies: [],
    credentials: localCredentials(name("salt"), fn),
  };
}

const allow = (action: string | string[], resource: string | string[]) => ({
  Effect: "Allow",
  Action: action,
  Resource: resource,
});

// What MskGrants.produce grants (with WriteDataIdempotently), and the same without it.
const producer = principal("producer", [
  allow(["kafka-cluster:Connect", "kafka-cluster:WriteDataIdempotently"], CLUSTER),
  allow(["kafka-cluster:DescribeTopic", "kafka-cluster:WriteData"], arns.topic(topic)),
]);
const notIdempotent = principal("not-idempotent", [
  allow("kafka-cluster:Connect", CLUSTER),
  allow(["kafka-cluster:DescribeTopic", "kafka-cluster:WriteData"], arns.topic(topic)),
]);
const consumer = principal("consumer", [
  allow("kafka-cluster:Connect", CLUSTER),
  allow(["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"], arns.topic(topic)),
  allow(["kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"], arns.group(group)),
]);
const noConnect = principal("no-connect", []);
const all = [producer, notIdempotent, consumer, noConnect];

let gateway: KafkaGateway;
let evaluator: IamEvaluator;

beforeAll(async () => {
  const admin = adminKafka("gateway-test-admin").admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic, numPartitions: 2 },
      { topic: other, numPartitions: 1 },
    ],
  });
  await admin.disconnect();
  const access: AccessModel = {
    accountId: "000000000000",
    region: "us-east-1",
    principals: all,
    resourcePolicies: new Map(),
    encryption: new Map(),
    constructPaths: new Map(),
  };
  evaluator = await createIamEvaluator(access);
  gateway = await startKafkaGateway({
    upstream: (process.env.KAFKA_BROKERS ?? "").split(","),
    clusterArn: () => CLUSTER,
    denials,
    principalOf: (key) => all.find((p) => p.credentials.accessKeyId === key),
    evaluator: () => evaluator,
  });
});
afterAll(() => gateway?.stop());

/** A kafkajs client signing in as `p`, as the library's client does with MSK_IAM_AUTH=true. */
const clientAs = (p: FunctionPrincipal) =>
  new Kafka({
    clientId: p.functionName,
    brokers: [...gateway.brokers],
    logLevel: logLevel.NOTHING,
    retry: { retries: 1, initialRetryTime: 100 },
    sasl: {
      mechanism: "oauthbearer",
      oauthBearerProvider: async () => ({
        value: (
          await generateAuthTokenFromCredentialsProvider({
            region: "us-east-1",
            awsCredentialsProvider: async () => p.credentials,
          })
        ).token,
      }),
    },
  });

const deniedFor = (fn: string) => denials.all().filter((d) => d.functionName === fn);

describe("the Kafka gateway (MSK IAM semantics)", () => {
  it("lets an idempotent producer with MskGrants.produce's actions write, and records nothing", async () => {
    const p = clientAs(producer).producer({ idempotent: true });
    await p.connect();
    const out = await p.send({ topic, acks: -1, messages: [{ key: "k", value: "v1" }] });
    await p.disconnect();
    expect(out[0]?.errorCode).toBe(0);
    expect(deniedFor("producer")).toEqual([]);
  });

  it("refuses an idempotent producer without WriteDataIdempotently: CLUSTER_AUTHORIZATION_FAILED, naming the grant", async () => {
    const p = clientAs(notIdempotent).producer({ idempotent: true });
    const error = await p.connect().then(
      () => p.send({ topic, acks: -1, messages: [{ value: "x" }] }).then(() => undefined),
      (e: Error) => e,
    );
    await p.disconnect().catch(() => undefined);
    expect(String((error as { type?: string })?.type ?? error)).toMatch(/CLUSTER_AUTHORIZATION_FAILED/);
    const d = deniedFor("not-idempotent");
    expect(d.map((x) => [x.action, x.resource])).toContainEqual([
      "kafka-cluster:WriteDataIdempotently",
      CLUSTER,
    ]);
    expect(d[0]?.advice).toMatch(/MskGrants\.produce/);
  });

  it("refuses a write to a topic the role may not write: TOPIC_AUTHORIZATION_FAILED", async () => {
    const p = clientAs(producer).producer({ idempotent: true, retry: { retries: 1, initialRetryTime: 50 } });
    await p.connect();
    const error = await p.send({ topic: other, acks: -1, messages: [{ value: "x" }] }).then(
      () => undefined,
      (e: Error) => e,
    );
    await p.disconnect();
    // The producer asks for the topic's metadata first: DescribeTopic is refused per topic.
    expect(String(error?.message)).toMatch(/Not authorized to access topics: \[Topic authorization failed\]/);
    expect(deniedFor("producer").map((x) => [x.action, x.resource])).toContainEqual([
      "kafka-cluster:DescribeTopic",
      arns.topic(other),
    ]);
  });

  it("refuses the connection of a role without kafka-cluster:Connect (SASL authentication fails)", async () => {
    const p = clientAs(noConnect).producer();
    const error = await p.connect().then(
      () => undefined,
      (e: Error) => e,
    );
    await p.disconnect().catch(() => undefined);
    expect(error?.message ?? "").toMatch(/SASL|authentication|Access denied/i);
    expect(deniedFor("no-connect").map((x) => x.action)).toEqual(["kafka-cluster:Connect"]);
  });

  it("lets a consumer with MskGrants.consume's actions join its group and read", async () => {
    const c = clientAs(consumer).consumer({ groupId: group, maxWaitTimeInMs: 200 });
    await c.connect();
    await c.subscribe({ topics: [topic], fromBeginning: true });
    const value = await new Promise<string>((resolve) => {
      void c.run({ eachMessage: async ({ message }) => resolve(String(message.value)) });
    });
    await c.disconnect();
    expect(value).toBe("v1");
    expect(deniedFor("consumer")).toEqual([]);
  });

  it("refuses a consumer in a group the role may not use: GROUP_AUTHORIZATION_FAILED", async () => {
    const c = clientAs(consumer).consumer({ groupId: name("foreign-group"), retry: { retries: 0 } });
    await c.connect();
    const error = await c.subscribe({ topics: [topic] }).then(
      () =>
        new Promise<Error>((resolve) => {
          c.on(c.events.CRASH, ({ payload }) => resolve(payload.error));
          void c.run({ eachMessage: async () => undefined }).catch(resolve);
        }),
      (e: Error) => e,
    );
    await c.disconnect().catch(() => undefined);
    // kafkajs reports FindCoordinator's GROUP_AUTHORIZATION_FAILED as a coordinator it cannot find.
    expect(error.message).toMatch(/group coordinator/);
    expect(deniedFor("consumer").map((x) => [x.action, x.resource])).toContainEqual([
      "kafka-cluster:DescribeGroup",
      arns.group(name("foreign-group")),
    ]);
  });

  it("makes a broker that is down look down: a refused dial reads as a connection error, so a client tries another broker", async () => {
    // A port nothing listens on: the broker of this listener is down.
    const dead = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as { port: number }).port;
        s.close(() => resolve(port));
      });
    });
    const lone = await startKafkaGateway({
      upstream: [`127.0.0.1:${dead}`],
      clusterArn: () => CLUSTER,
      denials,
      principalOf: (key) => all.find((p) => p.credentials.accessKeyId === key),
      evaluator: () => evaluator,
    });
    try {
      const admin = new Kafka({
        clientId: "dead-broker",
        brokers: [...lone.brokers],
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
      }).admin();
      let error = await admin.connect().then(
        () => undefined,
        (e: Error) => e,
      );
      // kafkajs wraps what the connection saw (retries exceeded, non-retriable): the innermost.
      type Wrapped = Error & { originalError?: Wrapped; cause?: Wrapped };
      while ((error as Wrapped)?.originalError ?? (error as Wrapped)?.cause)
        error = (error as Wrapped).originalError ?? (error as Wrapped).cause;
      // Not KafkaJSConnectionClosedError (a clean close after accept, which kafkajs retries on the
      // same broker) nor a SASL failure (never retried): kafkajs moves to another seed broker on this one.
      expect(error?.name).toBe("KafkaJSConnectionError");
      await admin.disconnect().catch(() => undefined);
    } finally {
      await lone.stop();
    }
  });
});
