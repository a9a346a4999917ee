import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

// `reliable-consumers local` on apps that cannot run: cdk's own error and a non-zero exit, before
// any emulator starts.
const REPO = join(import.meta.dirname, "..", "..");
// Inside the repository, so the apps resolve aws-cdk-lib and the package by name like this repo's code.
mkdirSync(join(REPO, ".tmp"), { recursive: true });
const dir = mkdtempSync(join(REPO, ".tmp", "local-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function local(cwd: string, args: string[]) {
  return spawnSync(
    join(REPO, "node_modules", ".bin", "tsx"),
    [join(REPO, "lib", "local", "cli.ts"), "local", ...args],
    {
      cwd,
      encoding: "utf8",
      env: {
        ...process.env,
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

  it("says what to give when there is no app", () => {
    const r = local(dir, []);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/has no cdk\.json\)\. Give --app "<command>" or --cdk-out <dir>/);
  });
});
