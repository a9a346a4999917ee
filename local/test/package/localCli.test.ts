import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

// `reliable-consumers-local local` on apps that cannot run: cdk's own error and a non-zero exit, before
// any emulator starts.
const REPO = join(import.meta.dirname, "..", "..", "..");
// Inside the repository, so the apps resolve aws-cdk-lib and the package by name like this repo's code.
mkdirSync(join(REPO, ".tmp"), { recursive: true });
const dir = mkdtempSync(join(REPO, ".tmp", "local-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Not the suite's own endpoint variables: the CLI would take them for emulators the user runs.
const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith("AWS_ENDPOINT_URL")),
);

function local(cwd: string, args: string[], extraEnv: Record<string, string> = {}) {
  return spawnSync(
    join(REPO, "node_modules", ".bin", "tsx"),
    [join(REPO, "local", "src", "main.ts"), "local", ...args],
    {
      cwd,
      encoding: "utf8",
      env: {
        ...userEnv,
        ...extraEnv,
        PATH: `${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}`,
        NODE_OPTIONS: "--conditions=reliable-consumers-source",
      },
      timeout: 180_000,
    },
  );
}

describe("reliable-consumers local on an app that cannot run", () => {
  it("shows the app's own synth error and exits 1", () => {
    const app = join(dir, "failing");
    mkdirSync(app);
    writeFileSync(
      join(app, "cdk.json"),
      JSON.stringify({ app: `node -e "console.error('Error: boom in MyStack'); process.exit(1)"` }),
    );
    const r = local(app, []);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("Error: boom in MyStack");
    expect(r.stderr).toContain("the app failed to synthesize");
    expect(r.stderr).not.toContain("starting DynamoDB Local");
  });

  it("names the handler entry that esbuild cannot bundle, with esbuild's error", () => {
    const app = join(dir, "unbundlable");
    mkdirSync(join(app, "src"), { recursive: true });
    writeFileSync(
      join(app, "src", "handler.ts"),
      'import { nope } from "./missing.ts";\nexport const handler = nope;\n',
    );
    writeFileSync(
      join(app, "app.ts"),
      [
        'import { App, Stack } from "aws-cdk-lib";',
        'import { ConsumerFunction } from "reliable-consumers/cdk";',
        "const app = new App();",
        'new ConsumerFunction(new Stack(app, "Broken"), "Orders", { entry: "src/handler.ts" });',
        "app.synth();",
      ].join("\n"),
    );
    const r = local(app, ["--app", `${join(REPO, "node_modules", ".bin", "tsx")} app.ts`]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /ConsumerBundlingError: Broken\/Orders: esbuild could not bundle the handler src\/handler\.ts/,
    );
    expect(r.stderr).toMatch(/Could not resolve "\.\/missing\.ts"/);
  });

  it("names the service, the URL and the flag or variable when an emulator the user runs does not answer", () => {
    const app = join(dir, "unreachable");
    mkdirSync(app);
    // Synthesizing would fail: the check comes first, so nothing is synthesized or started.
    writeFileSync(join(app, "cdk.json"), JSON.stringify({ app: `node -e "process.exit(1)"` }));
    const closed = "http://127.0.0.1:9"; // the discard port: nothing listens there
    const flag = local(app, ["--endpoint-url", closed]);
    expect(flag.status).toBe(3);
    expect(flag.stderr).toContain(`SQS at ${closed} (--endpoint-url) does not answer`);
    expect(flag.stderr).toContain(`DynamoDB at ${closed} (--endpoint-url) does not answer`);
    expect(flag.stderr).not.toMatch(/synthesizing|starting/);
    const variable = local(app, [], { AWS_ENDPOINT_URL_SQS: closed });
    expect(variable.status).toBe(3);
    expect(variable.stderr).toContain(`SQS at ${closed} (AWS_ENDPOINT_URL_SQS) does not answer`);
    expect(variable.stderr).not.toContain("DynamoDB at");
    const kafka = local(app, ["--kafka-brokers", "127.0.0.1:9"]);
    expect(kafka.status).toBe(3);
    expect(kafka.stderr).toContain("Kafka at 127.0.0.1:9 (--kafka-brokers) does not answer");
  });

  it("lists the console's flags, and refuses a --console-port that is no port before synthesizing anything", () => {
    const help = local(dir, ["--help"]);
    expect(help.status).toBe(0);
    expect(help.stderr).toContain("--console-port <n>");
    expect(help.stderr).toContain("--no-console");
    const app = join(dir, "bad-port");
    mkdirSync(app);
    writeFileSync(join(app, "cdk.json"), JSON.stringify({ app: `node -e "process.exit(1)"` }));
    const r = local(app, ["--console-port", "70000"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("--console-port 70000: not a port");
    expect(r.stderr).not.toMatch(/synthesizing|starting/);
  });

  it("says what to give when there is no app", () => {
    const r = local(dir, []);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/has no cdk\.json\)\. Give --app "<command>" or --cdk-out <dir>/);
  });
});
