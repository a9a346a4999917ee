import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { synthReference } from "./synthHelpers.ts";

/**
 * AWS's CloudFormation linter over every template the reference app synthesizes, in each of its
 * shapes (a referenced MSK cluster, a created one, MSK Serverless), next to cdk-nag: any finding
 * fails, unless the template acknowledges it (`Metadata.cfn-lint.config.ignore_checks`) with a
 * reason (`Metadata.cfn-lint.reasons`), see infra/cfnLintAcknowledgements.ts.
 */
const CFN_LINT = resolve(import.meta.dirname, "..", "..", ".venv", "bin", "cfn-lint");
const VARIANTS: Record<string, Record<string, unknown>> = {
  referenced: {},
  created: { createMskCluster: true },
  serverless: { mskClusterKind: "serverless" },
};

interface Finding {
  Rule: { Id: string };
  Message: string;
  Filename: string;
  Location: { Path?: Array<string | number> };
}

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation template JSON
type Template = { Resources: Record<string, { Type: string; Metadata?: any }> };

let dir: string;
const templates: Array<{ file: string; template: Template }> = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cfn-lint-"));
  for (const [variant, context] of Object.entries(VARIANTS)) {
    for (const stack of synthReference(context).assembly.stacks) {
      const file = join(dir, `${variant}-${stack.stackName}.json`);
      writeFileSync(file, JSON.stringify(stack.template));
      templates.push({ file, template: stack.template as Template });
    }
  }
}, 400_000); // several whole-app syntheses with cdk-nag and cfn-guard, on a shared two-core machine
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("cfn-lint over every synthesized template", () => {
  it("finds nothing that is not acknowledged", { timeout: 180_000 }, () => {
    if (!existsSync(CFN_LINT)) {
      throw new Error(
        `cfn-lint is not installed in .venv/. Install it: scripts/setup.sh (or: python3 -m venv .venv && .venv/bin/pip install cfn-lint==1.58.0)`,
      );
    }
    expect(templates.length).toBeGreaterThanOrEqual(Object.keys(VARIANTS).length);
    const run = spawnSync(CFN_LINT, ["--format", "json", ...templates.map((t) => t.file)], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    // Exit codes are a bit mask of error (2), warning (4) and informational (8) findings; 1 is a crash.
    if (run.status === 1 || run.error) throw new Error(`cfn-lint failed to run: ${run.error ?? run.stderr}`);
    const findings = JSON.parse(run.stdout || "[]") as Finding[];
    expect(
      findings.map(
        (f) => `${f.Rule.Id} ${f.Filename.split("/").pop()} ${f.Location.Path?.join("/")}: ${f.Message}`,
      ),
    ).toEqual([]);
    expect(run.status).toBe(0);
  });

  it("gives a reason for every acknowledged check", () => {
    const unexplained: string[] = [];
    let acknowledged = 0;
    for (const { file, template } of templates) {
      for (const [id, resource] of Object.entries(template.Resources)) {
        const meta = resource.Metadata?.["cfn-lint"];
        for (const check of (meta?.config?.ignore_checks ?? []) as string[]) {
          acknowledged++;
          const reason = meta?.reasons?.[check];
          if (typeof reason !== "string" || reason.length < 20) unexplained.push(`${file}: ${id} ${check}`);
        }
      }
    }
    expect(unexplained).toEqual([]);
    expect(acknowledged).toBeGreaterThan(0);
  });

  it("would fail on a finding: cfn-lint reports a broken template", () => {
    const bad = join(dir, "broken.json");
    writeFileSync(
      bad,
      JSON.stringify({
        Resources: { Q: { Type: "AWS::SQS::Queue", Properties: { VisibilityTimeout: "soon" } } },
      }),
    );
    const run = spawnSync(CFN_LINT, ["--format", "json", bad], { encoding: "utf8" });
    const ids = (JSON.parse(run.stdout || "[]") as Finding[]).map((f) => f.Rule.Id);
    expect(ids.some((id) => id.startsWith("E"))).toBe(true);
    expect(run.status).not.toBe(0);
  });
});
