import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { ConsumerFunction } from "reliable-consumers/cdk";
import { afterAll, describe, expect, it } from "vitest";
import {
  defaultEntry,
  REFERENCE_FUNCTIONS,
  SOURCE_BUNDLING,
  STUB_ENTRY,
} from "../../infra/stacks/referenceServiceStack.ts";
import { PROJECT_ROOT } from "../../lib/cdk/functionDefaults.ts";

// Every handler that exists is bundled once, by the same NodejsFunction settings the stacks use
// (esbuild, ESM, minified, source maps). Handlers that do not exist yet are listed, not failed.
const entries: Record<string, string> = {
  ...Object.fromEntries(
    REFERENCE_FUNCTIONS.map((name) => [name, defaultEntry(name)]).filter(([, p]) => existsSync(p!)),
  ),
  "kafka-topics-admin": join(PROJECT_ROOT, "lib", "handlers", "kafkaTopics", "handler.ts"),
  stub: STUB_ENTRY,
};
const missing = REFERENCE_FUNCTIONS.filter((name) => !existsSync(defaultEntry(name)));

const outdir = mkdtempSync(join(tmpdir(), "cdk-bundles-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe("function bundles", () => {
  const app = new App({ outdir, context: { "aws:cdk:enable-asset-metadata": true } });
  const stack = new Stack(app, "Bundles");
  for (const [name, entry] of Object.entries(entries))
    new ConsumerFunction(stack, name, { entry, bundling: SOURCE_BUNDLING });
  let assembly: ReturnType<App["synth"]>;

  it(`build for every existing handler (missing so far: ${missing.join(", ") || "none"})`, {
    timeout: 240_000,
  }, () => {
    assembly = app.synth();
    const template = Template.fromStack(stack).toJSON();
    const fns = Object.values(
      template.Resources as Record<string, { Type: string; Metadata?: Record<string, string> }>,
    ).filter((r) => r.Type === "AWS::Lambda::Function");
    expect(fns).toHaveLength(Object.keys(entries).length);
    for (const fn of fns) {
      const dir = join(assembly.directory, fn.Metadata!["aws:asset:path"]!);
      const bundle = join(dir, "index.mjs");
      expect(existsSync(bundle), bundle).toBe(true);
      expect(existsSync(`${bundle}.map`), `${bundle}.map`).toBe(true);
      expect(statSync(bundle).size).toBeGreaterThan(0);
      const code = readFileSync(bundle, "utf8");
      expect(code).toMatch(/export\s*\{[^}]*\bas handler\b|export\s*\{[^}]*\bhandler\b/); // ESM export of `handler`
      // Minified: long lines (multi-line template literals in dependencies keep a few newlines).
      if (code.length > 10_000) expect(code.length / code.split("\n").length).toBeGreaterThan(200);
    }
  });
});
