import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The guides show no pasted code: every TypeScript or JavaScript example in a page of the site
 * is an `{@includeCode}` of a file under examples/ that the suite runs (or at least typechecks:
 * tsconfig.json includes examples/*.ts; examples/consumer-app is checked by
 * test/package/consumerApp.test.ts). Pure: reads files only.
 */
const REPO = join(import.meta.dirname, "..", "..");
const read = (path: string) => readFileSync(join(REPO, path), "utf8");

/** The site's pages written in markdown: typedoc.json's project documents. */
function pages(): string[] {
  const config = JSON.parse(read("typedoc.json")) as { projectDocuments: string[] };
  return config.projectDocuments;
}

/** Fenced blocks whose language is code a reader would copy: ts, tsx, js, javascript, typescript. */
function pastedCodeBlocks(markdown: string): string[] {
  const fence = /^(`{3,}|~{3,})\s*([\w-]*)[^\n]*\n([\s\S]*?)^\1\s*$/gm;
  return [...markdown.matchAll(fence)]
    .filter((m) => /^(ts|tsx|typescript|js|jsx|javascript|mjs|cjs)$/i.test(m[2] ?? ""))
    .map((m) => m[3]!);
}

/** `{@includeCode path#a,b}` tags: the path relative to the page, and the regions named. */
function includes(markdown: string): Array<{ path: string; regions: string[] }> {
  // A tag inside a code span is text about the tag (TypeDoc leaves it alone too).
  const prose = markdown.replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\{@includeCode\s+([^\s#}]+)(?:#([^\s}]+))?\s*\}/g)].map((m) => ({
    path: m[1]!,
    regions: m[2] ? m[2].split(",") : [],
  }));
}

/** Every test file's text, to find the examples the suite runs. */
function testSources(): string {
  const walk = (dir: string): string[] =>
    readdirSync(join(REPO, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
    );
  return [...walk("test"), ...walk("local/test")].map(read).join("\n");
}

describe("the pasted-code check itself", () => {
  it("finds a fenced TypeScript block and leaves shell, JSON and includes alone", () => {
    const page = [
      "# Page",
      "```ts",
      "const x = 1;",
      "```",
      "```sh",
      "npm test",
      "```",
      "```json",
      "{}",
      "```",
      "{@includeCode ../examples/sqsQuickstart.ts#handler}",
      "Write `{@includeCode ../examples/file.ts#region}` to include code.",
      "~~~typescript",
      "let y = 2;",
      "~~~",
    ].join("\n");
    expect(pastedCodeBlocks(page)).toEqual(["const x = 1;\n", "let y = 2;\n"]);
    expect(includes(page)).toEqual([{ path: "../examples/sqsQuickstart.ts", regions: ["handler"] }]);
  });
});

describe.each(pages())("%s", (page) => {
  const markdown = read(page);

  it("has no pasted TypeScript or JavaScript code block", () => {
    expect(pastedCodeBlocks(markdown)).toEqual([]);
  });

  it("includes only files under examples/ that exist, by regions they mark, and that a test runs", () => {
    const tests = testSources();
    for (const { path, regions } of includes(markdown)) {
      const file = resolve(REPO, page, "..", path);
      const fromRoot = relative(REPO, file);
      expect(fromRoot, `${page} includes ${path}`).toMatch(/^examples\//);
      expect(existsSync(file), `${page} includes ${path}: no such file`).toBe(true);
      const text = readFileSync(file, "utf8");
      for (const region of regions) {
        expect(text, `${fromRoot}: no region ${region}`).toMatch(new RegExp(`#region ${region}\\b`));
        expect(text, `${fromRoot}: region ${region} not closed`).toMatch(
          new RegExp(`#endregion ${region}\\b`),
        );
      }
      // examples/consumer-app is copied whole by test/package/consumerApp.test.ts.
      const runBy = fromRoot.startsWith("examples/consumer-app/") ? "examples/consumer-app" : fromRoot;
      expect(tests, `${fromRoot}: no test under test/ names it`).toContain(runBy);
    }
  });
});
