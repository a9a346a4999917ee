/**
 * The size rules: no function spans more than 150 lines, closures included (a factory whose inner
 * functions are named counts them all: it is split into modules by stage instead), and none has
 * more than 80 lines of its own (its lines, less those of the named functions it holds). Tests and
 * benchmarks aside. `npx tsx scripts/functionSize.ts` lists the functions over either limit;
 * test/unit/functionSize.test.ts keeps the list empty.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

/** Lines a function may have of its own. */
export const OWN_LINES_LIMIT = 80;

/** Lines a function may span, first to last, its inner functions included. */
export const SPAN_LIMIT = 150;

/** The folders the rules cover: both packages, the reference service, its app and scenario, the scripts. */
export const COVERED = ["lib", "local/src", "local/scripts", "functions", "infra", "scenario", "scripts"];

const root = join(import.meta.dirname, "..");

const isFunction = (n: ts.Node) =>
  ts.isFunctionDeclaration(n) ||
  ts.isFunctionExpression(n) ||
  ts.isArrowFunction(n) ||
  ts.isMethodDeclaration(n) ||
  ts.isConstructorDeclaration(n) ||
  ts.isGetAccessor(n) ||
  ts.isSetAccessor(n);

/** A function's name, or undefined for an anonymous callback (whose lines count as its holder's). */
function nameOf(n: ts.Node, sf: ts.SourceFile): string | undefined {
  if ((ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n)) && n.name) return n.name.text;
  if (ts.isMethodDeclaration(n) || ts.isGetAccessor(n) || ts.isSetAccessor(n)) return n.name.getText(sf);
  if (ts.isConstructorDeclaration(n))
    return `${(n.parent as ts.ClassLikeDeclaration).name?.text ?? "class"}.constructor`;
  const p = n.parent;
  if (p && (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)))
    return p.name.getText(sf);
  return undefined;
}

/**
 * `{ file, line, name, ownLines, span }` of every function of one file with more than `limit` lines
 * of its own or a span over `spanLimit`.
 */
export function longFunctions(file: string, limit = OWN_LINES_LIMIT, spanLimit = SPAN_LIMIT) {
  const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line;
  const found: Array<{ file: string; line: number; name: string; ownLines: number; span: number }> = [];
  /** Returns the lines `n` takes from its holder: all of them for a named function, else its holder's share. */
  const visit = (n: ts.Node): number => {
    let inner = 0;
    if (!isFunction(n)) {
      ts.forEachChild(n, (c) => {
        inner += visit(c);
      });
      return inner;
    }
    ts.forEachChild(n, (c) => {
      inner += visit(c);
    });
    const span = lineOf(n.getEnd()) - lineOf(n.getStart(sf)) + 1;
    const name = nameOf(n, sf);
    if (span - inner > limit || span > spanLimit)
      found.push({
        file: relative(root, file),
        line: lineOf(n.getStart(sf)) + 1,
        name: name ?? "(anonymous)",
        ownLines: span - inner,
        span,
      });
    return name === undefined ? inner : span;
  };
  visit(sf);
  return found;
}

/** Every covered source file (tests, fixtures and benchmarks live outside the covered folders). */
export function coveredFiles(): string[] {
  return ts.sys
    .readDirectory(
      root,
      [".ts"],
      ["**/node_modules/**", "**/*.d.ts", "**/*.test.ts"],
      COVERED.map((d) => `${d}/**/*`),
    )
    .filter((f) => !f.endsWith(".d.ts"));
}

if (import.meta.main) {
  const over = coveredFiles().flatMap((f) => longFunctions(f));
  for (const f of over.sort((a, b) => b.ownLines - a.ownLines))
    console.log(`${f.ownLines} own\t${f.span} span\t${f.file}:${f.line} ${f.name}`);
  process.exitCode = over.length > 0 ? 1 : 0;
}
