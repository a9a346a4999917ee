/**
 * Issue 33: a consumer of an imported queue runs on the local runtime as AWS would run it against
 * the existing queue. The app is `ConsumerFunction` + `addSqsTrigger(sqs.Queue.fromQueueArn(…),
 * { deadLetterQueue: sqs.Queue.fromQueueArn(…) })` + a `DedupTable`; the template names the imported
 * queues only as literal ARNs (the mapping's source, the role's statements) and URLs (`DLQ_URL`).
 * Each gets a local stand-in the report names; the mapping polls it, the role's statements on the
 * imported ARNs authorise the calls on it, and what the role was not granted is still denied. The
 * app's own `QueueWithDlq`, named by an ARN built from its name, gets none.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from "@aws-sdk/client-sqs";
import { App, Duration, Stack } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { ConsumerFunction, DedupTable, QueueWithDlq } from "reliable-consumers/cdk";
import { createSqsClient } from "reliable-consumers/sqs";
import { formatReport, type LocalRuntime, startLocalRuntime } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOURCE_BUNDLING } from "../../../infra/stacks/referenceServiceStack.ts";
import { names } from "../../../test/support/names.ts";
import type { ProbeResult } from "../fixtures/imported/importedConsumer.ts";

const name = names(import.meta.url);
const outdir = mkdtempSync(join(tmpdir(), "imported-queue-cdk-"));
const client = createSqsClient();
const ddb = new DynamoDBClient({});
let runtime: LocalRuntime;

const QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:orders";
const DLQ_ARN = "arn:aws:sqs:eu-west-1:123456789012:orders-dlq";
// Named only by a variable the function was given no grant for.
const AUDIT_ARN = "arn:aws:sqs:eu-west-1:123456789012:audit";
const EVENTS_FIFO_ARN = "arn:aws:sqs:eu-west-1:123456789012:events.fifo";

function synthApp(): string {
  const app = new App({
    outdir,
    context: { "aws:cdk:enable-asset-metadata": true, "aws:cdk:enable-path-metadata": true },
  });
  const stack = new Stack(app, "Imported");
  const consumer = new ConsumerFunction(stack, "Consumer", {
    entry: fileURLToPath(new URL("../fixtures/imported/importedConsumer.ts", import.meta.url)),
    timeout: Duration.seconds(20),
    bundling: SOURCE_BUNDLING,
  });
  consumer.addSqsTrigger(sqs.Queue.fromQueueArn(stack, "Orders", QUEUE_ARN), {
    deadLetterQueue: sqs.Queue.fromQueueArn(stack, "OrdersDlq", DLQ_ARN),
  });
  new DedupTable(stack, "Dedup").addConsumer(consumer);
  const effects = new dynamodb.Table(stack, "Effects", {
    partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  });
  effects.grantWriteData(consumer.function);
  consumer.addEnvironment("EFFECTS_TABLE", effects.tableName);
  consumer.addEnvironment("AUDIT_QUEUE_URL", sqs.Queue.fromQueueArn(stack, "Audit", AUDIT_ARN).queueUrl);
  consumer.addEnvironment(
    "EVENTS_QUEUE_URL",
    sqs.Queue.fromQueueArn(stack, "Events", EVENTS_FIFO_ARN).queueUrl,
  );
  // The app's own queue, which its DLQ's redrive-allow policy names by an ARN built from its name:
  // not an import, so no stand-in.
  new QueueWithDlq(stack, "Own", { consumerTimeout: Duration.seconds(20) });
  return app.synth().directory;
}

beforeAll(async () => {
  runtime = await startLocalRuntime({ cdkOut: synthApp(), namePrefix: name("") });
}, 240_000);

afterAll(async () => {
  await runtime?.stop();
  rmSync(outdir, { recursive: true, force: true });
});

const standIn = (arn: string) => {
  const q = runtime.app.queues.find((x) => x.importedArn === arn);
  if (!q) throw new Error(`no stand-in for ${arn}`);
  return q;
};
const consumerName = () => runtime.findFunction("/Consumer/").name;
const deniedForConsumer = () => runtime.denials.all().filter((d) => d.functionName === consumerName());
const depth = async (url: string) => {
  const { Attributes = {} } = await client.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
      ],
    }),
  );
  return Object.values(Attributes).reduce((n, v) => n + Number(v), 0);
};
/** Waits for a condition the runtime brings about (polled, not timed); the test asserts it after. */
const until = async (ok: () => Promise<boolean>, ms = 90_000) => {
  const deadline = Date.now() + ms;
  while (!(await ok()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
};
const effectCount = async (id: string) => {
  const { Item } = await ddb.send(
    new GetItemCommand({
      TableName: runtime.app.tables.find((t) => t.logicalId.startsWith("Effects"))!.name,
      Key: { pk: { S: id } },
      ConsistentRead: true,
    }),
  );
  return Item?.n?.N === undefined ? 0 : Number(Item.n.N);
};
const probe = async (p: { probe: "SendMessage" | "DeleteQueue"; env: string }) => {
  const out = await runtime.host.invoke(consumerName(), p);
  if (!out.ok) throw new Error(`probe failed: ${out.errorType}: ${out.errorMessage}`);
  return out.value as ProbeResult;
};

describe("an imported queue on the local runtime", () => {
  it("gets a local stand-in for each imported ARN and URL, named in the report with its defaults", () => {
    const orders = standIn(QUEUE_ARN);
    expect(orders.name).toBe(name("orders"));
    expect(orders.fifo).toBe(false);
    expect(standIn(DLQ_ARN).name).toBe(name("orders-dlq"));
    expect(standIn(AUDIT_ARN).name).toBe(name("audit"));
    const events = standIn(EVENTS_FIFO_ARN);
    expect(events.fifo).toBe(true);
    expect(events.name).toBe(`${name("events")}.fifo`);

    const entries = runtime.app.report.standIns;
    expect(entries.map((e) => e.logicalId).sort()).toEqual(
      [AUDIT_ARN, EVENTS_FIFO_ARN, DLQ_ARN, QUEUE_ARN].sort(),
    );
    expect(entries.find((e) => e.logicalId === QUEUE_ARN)?.detail).toBe(
      `imported queue ${QUEUE_ARN}: a local stand-in (${orders.name}); its settings (visibility timeout, ` +
        "retention, redrive) are the emulator's defaults, not the real queue's",
    );
    expect(runtime.app.report.notes.some((n) => /real queues' settings .* are unknown here/.test(n))).toBe(
      true,
    );
    expect(formatReport(runtime.app).join("\n")).toContain(`a local stand-in (${orders.name})`);
    expect(runtime.app.queues.filter((q) => q.logicalId.startsWith("Own")).map((q) => q.importedArn)).toEqual(
      [undefined, undefined],
    );
    expect(runtime.app.report.unsupported).toEqual([]);
    expect(runtime.app.report.refused).toEqual([]);
  });

  it("maps the imported ARN and URLs to the stand-ins: the mapping's source and the variables", async () => {
    const mapping = runtime.app.mappings.find((m) => m.kind === "sqs");
    expect(mapping?.kind === "sqs" && mapping.queue.url).toBe(standIn(QUEUE_ARN).url);
    const env = runtime.findFunction("/Consumer/").environment;
    expect(env.DLQ_URL).toBe(standIn(DLQ_ARN).url);
    expect(env.AUDIT_QUEUE_URL).toBe(standIn(AUDIT_ARN).url);
    expect(env.EVENTS_QUEUE_URL).toBe(standIn(EVENTS_FIFO_ARN).url);
    const { Attributes } = await client.send(
      new GetQueueAttributesCommand({
        QueueUrl: standIn(EVENTS_FIFO_ARN).url,
        AttributeNames: ["FifoQueue"],
      }),
    );
    expect(Attributes?.FifoQueue).toBe("true");
  });

  it("processes each message sent to the stand-in once, and parks a permanent failure in the stand-in DLQ", {
    timeout: 150_000,
  }, async () => {
    const orders = standIn(QUEUE_ARN);
    const dlq = standIn(DLQ_ARN);
    const ids = ["o1", "o2", "o3"];
    await client.send(
      new SendMessageBatchCommand({
        QueueUrl: orders.url,
        Entries: [
          ...ids.map((id) => ({ Id: id, MessageBody: JSON.stringify({ id }) })),
          // A resend of o2 (a new message, the same business key): processed no second time.
          { Id: "o2-again", MessageBody: JSON.stringify({ id: "o2" }) },
          { Id: "p1", MessageBody: JSON.stringify({ id: "p1", poison: true }) },
        ],
      }),
    );
    await until(async () => (await depth(orders.url)) === 0 && (await depth(dlq.url)) === 1);
    expect(await depth(orders.url)).toBe(0);
    expect(await depth(dlq.url)).toBe(1);
    for (const id of ids) expect(await effectCount(id)).toBe(1);
    expect(await effectCount("p1")).toBe(0);

    const { Messages = [] } = await client.send(
      new ReceiveMessageCommand({ QueueUrl: dlq.url, MessageAttributeNames: ["All"], WaitTimeSeconds: 1 }),
    );
    expect(Messages.map((m) => JSON.parse(m.Body!))).toEqual([{ id: "p1", poison: true }]);
    // Parked with its context, which names the source as the function saw it: the stand-in.
    expect(JSON.stringify(Messages[0]?.MessageAttributes)).toContain(orders.arn);
    // Polling, deleting, looking up the source queue and parking were all allowed by the role's
    // statements on the imported ARNs.
    expect(deniedForConsumer()).toEqual([]);
  });

  it("still denies what the role was not granted on the stand-ins, naming the stand-in's ARN", async () => {
    expect(await probe({ probe: "SendMessage", env: "DLQ_URL" })).toMatchObject({ ok: true });

    const deleted = await probe({ probe: "DeleteQueue", env: "DLQ_URL" });
    expect(deleted).toMatchObject({ ok: false, name: "AccessDenied" });
    expect(deleted.ok === false && deleted.message).toMatch(
      new RegExp(`not authorized to perform: sqs:deletequeue on resource: ${standIn(DLQ_ARN).arn} `),
    );

    const audit = await probe({ probe: "SendMessage", env: "AUDIT_QUEUE_URL" });
    expect(audit).toMatchObject({ ok: false, name: "AccessDenied" });
    expect(deniedForConsumer().map((d) => [d.action, d.resource])).toEqual([
      ["sqs:DeleteQueue", standIn(DLQ_ARN).arn],
      ["sqs:SendMessage", standIn(AUDIT_ARN).arn],
    ]);
    // Denied, so nothing reached the audit stand-in, and the DLQ stand-in still holds the parked
    // record (received above, not deleted) and the probe the role may send.
    expect(await depth(standIn(AUDIT_ARN).url)).toBe(0);
    expect(await depth(standIn(DLQ_ARN).url)).toBe(2);
  });
});
