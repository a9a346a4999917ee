import { readFileSync } from "node:fs";
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
