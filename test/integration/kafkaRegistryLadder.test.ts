/**
 * Issue 34 item 1: the retry ladder of a Kafka consumer whose main mapping has a schema registry,
 * run as a synthesized CDK app on the local runtime, which deserializes through the registry as
 * Lambda does (kafkaSchemaRegistry.ts): JSON with Confluent (the stand-in, BASIC_AUTH from a
 * Secrets Manager secret), SOURCE with Glue (moto).
 *
 * The defect: the function gets JSON or the payload without its framing; its copies on the retry
 * topic carried those bytes, and the retry topic's mapping had the same registry, so it could not
 * deserialize them and sent each to the failure destination as DESERIALIZATION_ERROR: a transient
 * failure skipped the ladder. Dead letters could not be replayed into the main topic either.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import {
  CreateRegistryCommand,
  CreateSchemaCommand,
  DeleteRegistryCommand,
  GlueClient,
} from "@aws-sdk/client-glue";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import avsc from "avsc";
import { App, Duration, Stack } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import {
  ConsumerFunction,
  DedupTable,
  KafkaTopics,
  type MskClusterRef,
  type MskSchemaRegistry,
} from "reliable-consumers/cdk";
import {
  confluentRegistry,
  disconnectAllKafkaProducers,
  getKafkaProducer,
  glueRegistry,
} from "reliable-consumers/kafka";
import { type LocalRuntime, startLocalRuntime } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOURCE_BUNDLING } from "../../infra/stacks/referenceServiceStack.ts";
import {
  type KafkaDeadLetter,
  readTopicToEnd,
  replayKafkaDeadLetters,
} from "../../lib/dlq/kafkaDeadLetters.ts";
import { writeConfluentFrame, writeGlueFrame } from "../../lib/kafka/schemas/wireFormat.ts";
import { dynamodb as ddbClient } from "../support/clients.ts";
import { type ConfluentStandIn, startConfluentStandIn } from "../support/confluentRegistryStandIn.ts";
import { type MotoServer, startMotoServer } from "../support/motoServer.ts";
import { names } from "../support/names.ts";

const name = names(import.meta.url);
const fixture = fileURLToPath(new URL("../fixtures/registryLadder/consumer.ts", import.meta.url));
const outdir = mkdtempSync(join(tmpdir(), "registry-ladder-cdk-"));
const ddb = ddbClient();
const Payment = {
  type: "record",
  name: "LadderPayment",
  fields: [
    { name: "id", type: "string" },
    { name: "mode", type: "string" },
  ],
} as const;
const avroType = avsc.Type.forSchema(Payment as unknown as avsc.Schema);
const auth = { username: "registry-user", password: "registry-pass" };
const CLUSTER = "arn:aws:kafka:us-east-1:111111111111:cluster/c/1";

let moto: MotoServer;
let standIn: ConfluentStandIn;
let runtime: LocalRuntime;
let glue: GlueClient;
let registryArn: string;
let glueVersionId: string;
let confluentId: number;

/** One consumer per mode: its main topic and the function that reads it. */
const variants = {
  Json: { topic: name("reg-json"), format: "JSON" as const },
  Source: { topic: name("reg-source"), format: "SOURCE" as const },
};
type Variant = keyof typeof variants;

function synthApp(secretArn: string): string {
  const app = new App({
    outdir,
    context: {
      "aws:cdk:enable-asset-metadata": true,
      "aws:cdk:enable-path-metadata": true,
      // The stand-in serves plain HTTP on 127.0.0.1.
      allowPlaintextSchemaRegistry: true,
    },
  });
  const stack = new Stack(app, "RegistryLadder");
  const vpc = ec2.Vpc.fromVpcAttributes(stack, "Vpc", {
    vpcId: "vpc-1",
    availabilityZones: ["us-east-1a"],
    privateSubnetIds: ["subnet-1"],
  });
  const cluster: MskClusterRef = {
    clusterArn: CLUSTER,
    bootstrapBrokers: "b-1.c.abc.c1.kafka.us-east-1.amazonaws.com:9098",
    kind: "provisioned",
    vpc,
    subnets: { subnets: vpc.privateSubnets },
    securityGroup: ec2.SecurityGroup.fromSecurityGroupId(stack, "Sg", "sg-1"),
  };
  const dedup = new DedupTable(stack, "Dedup");
  const effects = new dynamodb.Table(stack, "Effects", {
    partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  });
  const registries: Record<Variant, MskSchemaRegistry> = {
    Json: {
      kind: "confluent",
      url: standIn.url,
      secret: secretsmanager.Secret.fromSecretCompleteArn(stack, "RegistrySecret", secretArn),
      eventRecordFormat: "JSON",
    },
    Source: { kind: "glue", registryArn, eventRecordFormat: "SOURCE" },
  };
  for (const [id, v] of Object.entries(variants) as Array<[Variant, (typeof variants)[Variant]]>) {
    const ladder = { topic: v.topic, retryDelaysSeconds: [1], partitions: 1, replicationFactor: 1 };
    new KafkaTopics(stack, `${id}Topics`, { cluster, ladder });
    const fn = new ConsumerFunction(stack, id, {
      entry: fixture,
      vpc,
      vpcSubnets: cluster.subnets,
      securityGroups: [cluster.securityGroup],
      timeout: Duration.seconds(20),
      bundling: SOURCE_BUNDLING,
    });
    fn.addMskTrigger(cluster, ladder, {
      schemaRegistry: registries[id],
      batchSize: 10,
      maxBatchingWindow: Duration.seconds(1),
    });
    dedup.addConsumer(fn);
    effects.grantWriteData(fn.function);
    fn.addEnvironment("EFFECTS_TABLE", effects.tableName);
  }
  return app.synth().directory;
}

beforeAll(async () => {
  moto = await startMotoServer();
  standIn = await startConfluentStandIn({ auth });
  glue = new GlueClient({ endpoint: moto.endpoint });
  const registryName = name("ladder-registry");
  registryArn = (await glue.send(new CreateRegistryCommand({ RegistryName: registryName }))).RegistryArn!;
  const schema = await glue.send(
    new CreateSchemaCommand({
      RegistryId: { RegistryName: registryName },
      SchemaName: "payment",
      DataFormat: "AVRO",
      Compatibility: "BACKWARD",
      SchemaDefinition: JSON.stringify(Payment),
    }),
  );
  glueVersionId = schema.SchemaVersionId!;
  confluentId = Number(
    await confluentRegistry({ url: standIn.url, auth }).idFor(
      { subject: `${variants.Json.topic}-value`, format: "AVRO", definition: JSON.stringify(Payment) },
      { register: true },
    ),
  );
  const secret = await new SecretsManagerClient({ endpoint: moto.endpoint }).send(
    new CreateSecretCommand({ Name: name("registry-credentials"), SecretString: JSON.stringify(auth) }),
  );
  runtime = await startLocalRuntime({
    cdkOut: synthApp(secret.ARN!),
    namePrefix: name(""),
    emulatorEnv: {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => /^AWS_|^KAFKA_/.test(k))),
      AWS_ENDPOINT_URL_GLUE: moto.endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: moto.endpoint,
    } as Record<string, string>,
  });
}, 240_000);

afterAll(async () => {
  await runtime?.stop();
  await disconnectAllKafkaProducers();
  await glue?.send(new DeleteRegistryCommand({ RegistryId: { RegistryArn: registryArn } })).catch(() => {});
  await standIn?.stop();
  await moto?.stop();
  rmSync(outdir, { recursive: true, force: true });
});

/** A value framed as the registry's serializer writes it. */
function framed(variant: Variant, value: { id: string; mode: string }): Buffer {
  const payload = avroType.toBuffer(value);
  return variant === "Json"
    ? writeConfluentFrame(confluentId, payload)
    : writeGlueFrame(glueVersionId, payload);
}

interface Effect {
  id: string;
  attempt: number;
  replayed: boolean;
}

async function effects(): Promise<Effect[]> {
  const table = runtime.findFunction("/Json/").environment.EFFECTS_TABLE!;
  const out = await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
  return (out.Items ?? []).map((i) => ({
    id: i.id!.S!,
    attempt: Number(i.attempt!.N),
    replayed: i.replayed!.BOOL!,
  }));
}

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await sleep(300);
  }
}

async function deadLetters(topic: string): Promise<KafkaDeadLetter[]> {
  const letters: KafkaDeadLetter[] = [];
  await readTopicToEnd(`${topic}.DLQ`, async (batch) => void letters.push(...batch));
  return letters;
}

describe("the retry ladder behind a mapping with a schema registry, on the local runtime (issue 34 item 1)", () => {
  it("a transient failure climbs the ladder, a bad record goes to the DLQ as DESERIALIZATION_ERROR, and a dead letter replays into the main topic, for JSON (Confluent) and SOURCE (Glue)", async () => {
    const producer = getKafkaProducer();
    for (const variant of Object.keys(variants) as Variant[]) {
      const { topic } = variants[variant];
      await producer.send(topic, [
        { key: "a", value: framed(variant, { id: `${variant}-a`, mode: "flaky" }) },
        { key: "b", value: framed(variant, { id: `${variant}-b`, mode: "poison" }) },
        // Not framed for the registry: Lambda cannot deserialize it.
        { key: "raw", value: '{"id":"raw","mode":"ok"}' },
      ]);
    }
    for (const variant of Object.keys(variants) as Variant[]) {
      const { topic } = variants[variant];
      // The flaky record failed once on the main topic and ran again from the retry topic (before
      // the fix, the retry topic's mapping could not deserialize its copy: a third dead letter).
      const state = await until(
        `${variant}-a on the retry topic, or a third dead letter`,
        async () => ({ ran: await effects(), letters: await deadLetters(topic) }),
        ({ ran, letters }) =>
          letters.length >= 3 ||
          (letters.length >= 2 && ran.some((x) => x.id === `${variant}-a` && x.attempt === 2)),
      );
      const letters = state.letters;
      const kinds = letters.map((l) => `${l.writtenBy}:${l.errorType}`).sort();
      expect(kinds, variant).toEqual(["consumer:PermanentError", "lambda:DESERIALIZATION_ERROR"]);
      expect(
        state.ran
          .filter((x) => x.id === `${variant}-a`)
          .map((x) => x.attempt)
          .sort(),
      ).toEqual([1, 2]);
      // The poison record's letter is what the function got, and says so.
      const poison = letters.find((l) => l.writtenBy === "consumer")!;
      const form = JSON.parse(String(poison.message.headers?.["x-value-schema"]));
      expect(form).toMatchObject({ recordFormat: variants[variant].format, dataFormat: "AVRO" });
      // A replay frames it again: the main topic's mapping reads it, and the handler sees it.
      const replay = await replayKafkaDeadLetters(`${topic}.DLQ`, {
        ledger: false,
        filter: { errorTypes: ["PermanentError"] },
        registry: (kind) =>
          kind === "glue"
            ? glueRegistry({ client: glue, env: {} })
            : confluentRegistry({ url: standIn.url, auth, env: {} }),
      });
      expect(replay).toMatchObject({ moved: 1, failed: 0 });
      await until(`${variant}-b replayed`, effects, (e) =>
        e.some((x) => x.id === `${variant}-b` && x.replayed),
      );
      expect((await deadLetters(topic)).length, variant).toBe(2);
    }
    const seen = await effects();
    for (const variant of Object.keys(variants) as Variant[])
      expect(
        seen
          .filter((e) => e.id.startsWith(variant))
          .map((e) => `${e.id}@${e.attempt}${e.replayed ? " replayed" : ""}`)
          .sort(),
        variant,
      ).toEqual([`${variant}-a@1`, `${variant}-a@2`, `${variant}-b@1`, `${variant}-b@1 replayed`]);
  }, 300_000);
});
