import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// The README's Install examples are the code of examples/consumer-app, which consumerApp.test.ts
// installs from the packed tarball, typechecks, synthesizes and runs.
const REPO = join(import.meta.dirname, "..", "..");
const read = (path: string) => readFileSync(join(REPO, path), "utf8");
const squash = (code: string) => code.replace(/\s+/g, " ").trim();

describe("README Install section", () => {
  const readme = read("README.md");
  const install = readme.slice(
    readme.indexOf("## Install"),
    readme.indexOf("\n## ", readme.indexOf("## Install") + 3),
  );
  const blocks = [...install.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);

  it("has the five-line CDK example and the handler", () => {
    expect(blocks).toHaveLength(2);
    expect(blocks[0]!.trim().split("\n")).toHaveLength(5);
  });

  it("shows code that the example app runs, verbatim", () => {
    expect(squash(read("examples/consumer-app/lib/consumerAppStack.ts"))).toContain(squash(blocks[0]!));
    expect(squash(read("examples/consumer-app/src/orderHandler.ts"))).toContain(squash(blocks[1]!));
  });
});

/**
 * Every TypeScript block of the README, wherever it is, is code a test runs: found, whitespace
 * aside, in examples/*.ts (typechecked by `npm test`, run by test/integration) or in
 * examples/consumer-app (installed, typechecked, synthesized and run by consumerApp.test.ts).
 */
describe("README code blocks", () => {
  const tested = (dir: string): string[] =>
    readdirSync(join(REPO, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? e.name === "node_modules" || e.name === "cdk.out"
          ? []
          : tested(join(dir, e.name))
        : /\.tsx?$/.test(e.name)
          ? [join(dir, e.name)]
          : [],
    );
  const sources = tested("examples").map((path) => ({ path, code: squash(read(path)) }));
  const blocks = [
    ...read("README.md").matchAll(/```(?:ts|tsx|typescript|js|javascript)\n([\s\S]*?)```/g),
  ].map((m) => m[1]!);

  it("has code to check", () => {
    expect(blocks.length).toBeGreaterThan(0);
  });

  it.each(blocks.map((b, i) => [i + 1, b] as const))(
    "block %i comes from a tested file under examples/",
    (_, block) => {
      const from = sources.filter((s) => s.code.includes(squash(block))).map((s) => s.path);
      expect(from, `not found in examples/:\n${block}`).not.toEqual([]);
    },
  );
});
