/**
 * Issue 21: the local runtime enforces what AWS enforces. A CDK app of the library's constructs is
 * synthesized and run on the local runtime (each function acts as its role, through the gateway):
 * - for each service, a function without the construct's grant fails with AWS's AccessDenied (and
 *   the denial names the grant), and one with it succeeds;
 * - the requeue of four 300 KB healthy records on their last receive: none dead-lettered (it needs
 *   SendMessage on the source queue, which `addSqsTrigger` grants, and chunks by bytes).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateRegistryCommand, CreateSchemaCommand, GlueClient } from "@aws-sdk/client-glue";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { GetQueueAttributesCommand, SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import { App, Duration, Stack } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { createDedupStore, type Lease } from "reliable-consumers";
import { ConsumerFunction, DedupTable, QueueWithDlq } from "reliable-consumers/cdk";
import { createSqsClient } from "reliable-consumers/sqs";
import { type LocalRuntime, startLocalRuntime } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOURCE_BUNDLING } from "../../../infra/stacks/referenceServiceStack.ts";
import { type MotoServer, startMotoServer } from "../../../test/support/motoServer.ts";
import { names } from "../../../test/support/names.ts";

const name = names(import.meta.url);
const fixture = (f: string) => fileURLToPath(new URL(`../fixtures/enforcement/${f}`, import.meta.url));
const outdir = mkdtempSync(join(tmpdir(), "enforcement-cdk-"));
const sqs = createSqsClient();
const ddb = new DynamoDBClient({});
let moto: MotoServer;
let runtime: LocalRuntime;
let registryArn: string;
let schemaVersionId: string;
let secretArn: string;

/** The app: a held-record consumer (addSqsTrigger + DedupTable), and two callers, one with grants, one without. */
function synthApp(): string {
  const app = new App({
    outdir,
    context: { "aws:cdk:enable-asset-metadata": true, "aws:cdk:enable-path-metadata": true },
  });
  const stack = new Stack(app, "Enforcement");
  const orders = new QueueWithDlq(stack, "Orders", {
    consumerTimeout: Duration.seconds(20),
    maxBatchingWindow: Duration.seconds(3),
    maxReceiveCount: 1,
  });
  const dedup = new DedupTable(stack, "Dedup");
  const held = new ConsumerFunction(stack, "Held", {
    entry: fixture("heldConsumer.ts"),
    timeout: Duration.seconds(20),
    bundling: SOURCE_BUNDLING,
  });
  // A batching window, so the four large records arrive in one batch (one requeue of 1.2 MB).
  held.addSqsTrigger(orders, { batchSize: 10, maxBatchingWindow: Duration.seconds(3) });
  dedup.addConsumer(held);

  const table = new dynamodb.Table(stack, "Effects", {
    partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    stream: dynamodb.StreamViewType.NEW_IMAGE,
  });
  const caller = (id: string) =>
    new ConsumerFunction(stack, id, { entry: fixture("caller.ts"), bundling: SOURCE_BUNDLING });
  // Its own queue: a probe message must not land where the held-record test counts its DLQ.
  const probes = new QueueWithDlq(stack, "Probes", { consumerTimeout: Duration.seconds(20) });
  const granted = caller("Granted");
  probes.queue.grantSendMessages(granted.function);
  table.grantWriteData(granted.function);
  granted.useSchemaRegistry({ kind: "glue", registryArn });
  granted.useSchemaRegistry({
    kind: "confluent",
    url: "https://registry.example.com",
    secret: secretsmanager.Secret.fromSecretCompleteArn(stack, "RegistrySecret", secretArn),
  });
  caller("Bare");
  // A stream mapping wired by the construct (it grants stream read), and one wired by hand without.
  const reader = caller("StreamReader");
  reader.addDynamoDbStreamTrigger(table);
  const unread = caller("StreamUngranted");
  new lambda.CfnEventSourceMapping(stack, "UngrantedMapping", {
    functionName: unread.function.functionName,
    eventSourceArn: table.tableStreamArn!,
    startingPosition: "TRIM_HORIZON",
  });
  return app.synth().directory;
}

beforeAll(async () => {
  moto = await startMotoServer();
  const glue = new GlueClient({ endpoint: moto.endpoint });
  const registry = await glue.send(new CreateRegistryCommand({ RegistryName: name("registry") }));
  registryArn = registry.RegistryArn!;
  const schema = await glue.send(
    new CreateSchemaCommand({
      RegistryId: { RegistryName: name("registry") },
      SchemaName: "payment",
      DataFormat: "AVRO",
      Compatibility: "BACKWARD",
      SchemaDefinition: JSON.stringify({
        type: "record",
        name: "P",
        fields: [{ name: "id", type: "string" }],
      }),
    }),
  );
  schemaVersionId = schema.SchemaVersionId!;
  const secret = await new SecretsManagerClient({ endpoint: moto.endpoint }).send(
    new CreateSecretCommand({
      Name: name("registry-credentials"),
      SecretString: '{"username":"u","password":"p"}',
    }),
  );
  secretArn = secret.ARN!;
  const cdkOut = synthApp();
  runtime = await startLocalRuntime({
    cdkOut,
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
  await moto?.stop();
  rmSync(outdir, { recursive: true, force: true });
});

const fnNamed = (id: string) => runtime.findFunction(`/${id}/`).name;
const invoke = async (id: string, event: unknown) => {
  const out = await runtime.host.invoke(fnNamed(id), event);
  if (!out.ok) throw new Error(`${id} failed: ${out.errorType}: ${out.errorMessage}`);
  return out.value as { ok: boolean; name?: string; message?: string };
};
const deniedFor = (id: string) => runtime.denials.all().filter((d) => d.functionName === fnNamed(id));

describe("a grant the construct gives, and the same call without it", () => {
  it("SQS: SendMessage is AccessDenied without queue.grantSendMessages, and the denial says so", async () => {
    const queueUrl = runtime.app.queues.find((q) => q.logicalId.startsWith("ProbesQueue"))!.url;
    expect(await invoke("Granted", { call: "sqs:SendMessage", queueUrl })).toEqual({ ok: true });
    const bare = await invoke("Bare", { call: "sqs:SendMessage", queueUrl });
    expect(bare).toMatchObject({ ok: false, name: "AccessDenied" });
    expect(bare.message).toMatch(/is not authorized to perform: sqs:sendmessage on resource: arn:aws:sqs:/);
    expect(
      deniedFor("Bare")
        .map((d) => d.advice)
        .join("\n"),
    ).toMatch(/grantSendMessages\(fn\)/);
  });

  it("DynamoDB: PutItem is AccessDeniedException without table.grantWriteData", async () => {
    const table = runtime.app.tables.find((t) => t.logicalId.startsWith("Effects"))!.name;
    expect(await invoke("Granted", { call: "dynamodb:PutItem", table })).toEqual({ ok: true });
    expect(await invoke("Bare", { call: "dynamodb:PutItem", table })).toMatchObject({
      ok: false,
      name: "AccessDeniedException",
    });
    expect(
      deniedFor("Bare").some((d) => d.action === "dynamodb:PutItem" && /grantWriteData/.test(d.advice)),
    ).toBe(true);
  });

  it("Glue: GetSchemaVersion by id needs Resource * (useSchemaRegistry grants it)", async () => {
    expect(await invoke("Granted", { call: "glue:GetSchemaVersion", schemaVersionId })).toEqual({ ok: true });
    expect(await invoke("Bare", { call: "glue:GetSchemaVersion", schemaVersionId })).toMatchObject({
      ok: false,
      name: "AccessDeniedException",
    });
    expect(deniedFor("Bare").find((d) => d.action === "glue:GetSchemaVersion")?.resource).toBe("*");
  });

  it("Secrets Manager: GetSecretValue needs the secret's grantRead (useSchemaRegistry's secret)", async () => {
    expect(await invoke("Granted", { call: "secretsmanager:GetSecretValue", secretArn })).toEqual({
      ok: true,
    });
    expect(await invoke("Bare", { call: "secretsmanager:GetSecretValue", secretArn })).toMatchObject({
      ok: false,
      name: "AccessDeniedException",
    });
  });

  it("DynamoDB Streams: a mapping wired without grantStreamRead is refused as Lambda refuses it at creation (issue 34 item 7)", () => {
    const refused = runtime.app.report.refused.find((r) => r.logicalId === "UngrantedMapping");
    expect(refused?.detail).toMatch(
      /^InvalidParameterValueException: Cannot access stream arn:aws:dynamodb:.*\/stream\/.*\. Please ensure the role can perform the GetRecords, GetShardIterator, DescribeStream, and ListStreams Actions on your stream in IAM\.$/,
    );
    expect(runtime.app.mappings.some((m) => m.logicalId === "UngrantedMapping")).toBe(false);
    const denied = deniedFor("StreamUngranted");
    expect(denied[0]?.action).toMatch(/^dynamodb:(DescribeStream|GetShardIterator|GetRecords)$/);
    expect(denied[0]?.advice).toMatch(/grantStreamRead\(fn\)/);
    // The construct's DynamoDB stream trigger grants what its mapping needs.
    expect(deniedFor("StreamReader")).toEqual([]);
  });
});

describe("the requeue of healthy records on their last receive (addSqsTrigger, sqsSettlement)", () => {
  it("four 300 KB records held elsewhere are sent back as copies, not dead-lettered; each runs once released", {
    timeout: 180_000,
  }, async () => {
    const orders = runtime.app.queues.find((q) => q.logicalId.startsWith("OrdersQueue"))!;
    const dlq = runtime.app.queues.find((q) => q.arn === orders.deadLetterQueueArn)!;
    const dedupTable = runtime.app.tables.find((t) => t.logicalId.startsWith("Dedup"))!.name;
    // Another invocation holds every key, renewing its short lease as a long job would: the records
    // are healthy, and this (maxReceiveCount 1) is their last receive.
    const holder = createDedupStore({ tableName: dedupTable, scope: "Held", client: ddb, leaseMs: 6_000 });
    const ids = ["r1", "r2", "r3", "r4"];
    const leases = new Map<string, Lease>();
    for (const id of ids) {
      const claim = await holder.claim(id);
      if (claim.status !== "claimed") throw new Error(`expected to hold ${id}, got ${claim.status}`);
      leases.set(id, claim.lease);
    }
    const renewing = setInterval(() => {
      for (const [id, lease] of leases) void holder.renew(lease).then((l) => leases.set(id, l));
    }, 1_000);
    const depth = async (url: string) => {
      const a = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
          ],
        }),
      );
      const n = (k: string) => Number((a.Attributes as Record<string, string> | undefined)?.[k] ?? 0);
      return {
        all:
          n("ApproximateNumberOfMessages") +
          n("ApproximateNumberOfMessagesNotVisible") +
          n("ApproximateNumberOfMessagesDelayed"),
        delayed: n("ApproximateNumberOfMessagesDelayed"),
      };
    };
    const deadline = Date.now() + 150_000;
    const until = async (ok: () => Promise<boolean>) => {
      while (!(await ok()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    };
    try {
      const pad = "x".repeat(300_000);
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: orders.url,
          Entries: ids.slice(0, 3).map((id) => ({ Id: id, MessageBody: JSON.stringify({ id, pad }) })),
        }),
      );
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: orders.url,
          Entries: [{ Id: "r4", MessageBody: JSON.stringify({ id: "r4", pad }) }],
        }),
      );
      // All four came back as fresh copies, delayed until the holder's lease would end (1.2 MB:
      // more than one SendMessageBatch may carry).
      await until(async () => (await depth(orders.url)).delayed === 4);
      expect((await depth(orders.url)).delayed).toBe(4);
      expect((await depth(dlq.url)).all).toBe(0);
    } finally {
      clearInterval(renewing);
    }
    for (const lease of leases.values()) await holder.release(lease);
    await until(async () => (await depth(orders.url)).all === 0);
    expect((await depth(orders.url)).all).toBe(0);
    expect((await depth(dlq.url)).all).toBe(0);
    for (const id of ids) expect((await holder.claim(id)).status).toBe("duplicate");
    expect(deniedFor("Held")).toEqual([]);
  });
});
