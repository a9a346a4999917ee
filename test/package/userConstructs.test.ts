import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import {
  ConsumerBundlingError,
  ConsumerFunction,
  ConsumerRuleError,
  DedupTable,
  OutboxTable,
  QueueWithDlq,
} from "reliable-consumers/cdk";
import { afterAll, describe, expect, it } from "vitest";
import { PREBUILT_HANDLER } from "../../lib/cdk/prebuiltHandlers.ts";

// The constructs with a user's code: a project of its own (not this repository), a function built
// another way, and the prebuilt relay and sweeper with no function of the user's.
const REPO = join(import.meta.dirname, "..", "..");
const project = mkdtempSync(join(tmpdir(), "rc-user-app-"));
mkdirSync(join(project, "src"));
writeFileSync(join(project, "package.json"), JSON.stringify({ name: "user-app", type: "module" }));
writeFileSync(join(project, "package-lock.json"), JSON.stringify({ name: "user-app", lockfileVersion: 3 }));
writeFileSync(
  join(project, "src", "handler.ts"),
  "export const handler = async () => ({ batchItemFailures: [] });\n",
);
writeFileSync(
  join(project, "src", "broken.ts"),
  'import { nothing } from "./missing.ts";\nexport const handler = nothing;\n',
);
// A user's app has esbuild as a devDependency (NodejsFunction runs it from the project).
mkdirSync(join(project, "node_modules", ".bin"), { recursive: true });
symlinkSync(join(REPO, "node_modules", "esbuild"), join(project, "node_modules", "esbuild"));
symlinkSync(join(REPO, "node_modules", ".bin", "esbuild"), join(project, "node_modules", ".bin", "esbuild"));
afterAll(() => rmSync(project, { recursive: true, force: true }));

const assetFile = (app: App, stack: Stack, logicalIdPart: string, file: string) => {
  const assembly = app.synth();
  const resources = Template.fromStack(stack).toJSON().Resources as Record<
    string,
    { Type: string; Metadata?: Record<string, string> }
  >;
  const [, fn] = Object.entries(resources).find(
    ([id, r]) => r.Type === "AWS::Lambda::Function" && id.includes(logicalIdPart),
  )!;
  return readFileSync(join(assembly.directory, fn.Metadata!["aws:asset:path"]!, file), "utf8");
};

describe("ConsumerFunction in a user's project", () => {
  it("bundles an entry outside this repository with the user's projectRoot and lock file", () => {
    const app = new App({ context: { "aws:cdk:enable-asset-metadata": true } });
    const stack = new Stack(app, "User");
    new ConsumerFunction(stack, "Orders", {
      entry: join(project, "src", "handler.ts"),
      projectRoot: project,
      depsLockFilePath: join(project, "package-lock.json"),
    });
    expect(assetFile(app, stack, "Orders", "index.mjs")).toMatch(/batchItemFailures/);
  });

  it("finds the lock file from the user's app (the working directory) when none is given", () => {
    const cwd = process.cwd();
    process.chdir(project);
    try {
      const app = new App({ context: { "aws:cdk:enable-asset-metadata": true } });
      const stack = new Stack(app, "User");
      new ConsumerFunction(stack, "Orders", { entry: join(project, "src", "handler.ts") });
      expect(assetFile(app, stack, "Orders", "index.mjs")).toMatch(/batchItemFailures/);
    } finally {
      process.chdir(cwd);
    }
  });

  it("passes NodejsFunction's props through: runtime, architecture, bundling (merged over BUNDLING)", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new Stack(app, "User");
    const fn = new ConsumerFunction(stack, "Orders", {
      entry: join(project, "src", "handler.ts"),
      depsLockFilePath: join(project, "package-lock.json"),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.X86_64,
      bundling: { minify: false },
      ephemeralStorageSize: undefined,
      tracing: lambda.Tracing.ACTIVE,
    });
    expect(fn.function).toBeInstanceOf(NodejsFunction);
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::Function", {
      Runtime: "nodejs22.x",
      Architectures: ["x86_64"],
      TracingConfig: { Mode: "Active" },
    });
  });

  it("names the entry and the construct when esbuild cannot bundle the handler", () => {
    const stack = new Stack(new App(), "User");
    const entry = join(project, "src", "broken.ts");
    const make = () =>
      new ConsumerFunction(stack, "Broken", { entry, depsLockFilePath: join(project, "package-lock.json") });
    expect(make).toThrow(ConsumerBundlingError);
    try {
      new ConsumerFunction(new Stack(new App(), "Again"), "Broken", {
        entry,
        depsLockFilePath: join(project, "package-lock.json"),
      });
    } catch (error) {
      expect((error as Error).message).toContain(
        `Again/Broken: esbuild could not bundle the handler ${entry}`,
      );
    }
  });
});

describe("the consumer rules on a function built another way (ConsumerFunction.fromFunction)", () => {
  const userFunction = (stack: Stack, timeout: Duration) =>
    new lambda.Function(stack, "Fn", {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: "index.handler",
      code: lambda.Code.fromInline("exports.handler = async () => ({})"),
      timeout,
    });

  it("checks visibility ≥ 6 × its timeout + the batching window", () => {
    const stack = new Stack(new App(), "S");
    const consumer = ConsumerFunction.fromFunction(stack, "Mine", userFunction(stack, Duration.minutes(1)));
    const short = new QueueWithDlq(stack, "Short", { visibilityTimeout: Duration.minutes(5) });
    expect(() => consumer.addSqsTrigger(short)).toThrow(ConsumerRuleError);
    expect(() => consumer.addSqsTrigger(short)).toThrow(/needs at least 6 × function timeout \(1m\)/);
    const ok = new QueueWithDlq(stack, "Ok", { consumerTimeout: Duration.minutes(1) });
    consumer.addSqsTrigger(ok);
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      FunctionResponseTypes: ["ReportBatchItemFailures"],
    });
  });

  it("checks the dedup window against its triggers' retry paths", () => {
    const app = new App();
    const stack = new Stack(app, "S");
    const consumer = ConsumerFunction.fromFunction(stack, "Mine", userFunction(stack, Duration.seconds(30)));
    const queue = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.seconds(30),
      retentionPeriod: Duration.days(4),
    });
    consumer.addSqsTrigger(queue);
    consumer.useDedupWindow(new DedupTable(stack, "Dedup", { window: Duration.hours(1) }));
    expect(() => app.synth()).toThrow(/remembers keys for 1h .*\n {2}- Mine: /);
  });
});

describe("OutboxTable with the prebuilt relay and sweeper", () => {
  it("deploys them from the package's bundle, with no function of the user's", () => {
    const app = new App({ context: { "aws:cdk:enable-asset-metadata": true } });
    const stack = new Stack(app, "S");
    const outbox = new OutboxTable(stack, "Outbox");
    const relay = outbox.addRelay();
    outbox.addSweeper();
    expect(relay.function).not.toBeInstanceOf(NodejsFunction);
    const t = Template.fromStack(stack);
    t.resourcePropertiesCountIs("AWS::Lambda::Function", { Handler: PREBUILT_HANDLER }, 2);
    t.hasResourceProperties("AWS::Lambda::EventSourceMapping", { BisectBatchOnFunctionError: true });
    t.resourceCountIs("AWS::Events::Rule", 1);
    expect(assetFile(app, stack, "OutboxRelay", "index.mjs")).toMatch(/export\s*\{[^}]*handler/);
  });

  it("still takes the user's own relay", () => {
    const stack = new Stack(new App({ context: { "aws:cdk:bundling-stacks": [] } }), "S");
    const outbox = new OutboxTable(stack, "Outbox");
    const mine = new ConsumerFunction(stack, "MyRelay", {
      entry: join(project, "src", "handler.ts"),
      depsLockFilePath: join(project, "package-lock.json"),
    });
    expect(outbox.addRelay(mine, { batchSize: 10 })).toBe(mine);
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::EventSourceMapping", { BatchSize: 10 });
  });
});
