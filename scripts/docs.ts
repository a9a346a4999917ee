/**
 * `npm run docs`: the documentation site, static and offline, in `site/` (gitignored).
 *
 * One tool, TypeDoc (why: CONTRIBUTING.md, "The documentation site"): the guides are its project
 * documents (docs/*.md, listed in typedoc.json), their code comes from examples/ through
 * `{@includeCode}`, and the API reference is generated from the TSDoc of every entry point of
 * both packages. The entry points are read from the packages' `exports`, so a new subpath gets
 * its reference page without an edit here, and a name removed from an entry point leaves the
 * reference with it.
 *
 *   npm run docs             # build site/, fail on any warning (a broken {@link}, a missing include)
 *   npm run docs -- --out x  # elsewhere (the browser test builds into a temp dir)
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  Application,
  Comment,
  CommentTag,
  Converter,
  type DocumentationEntryPoint,
  LogLevel,
  ReflectionKind,
} from "typedoc";

const root = join(import.meta.dirname, "..");

/** The condition under which each package's `exports` name its TypeScript sources. */
const SOURCE_CONDITION = "reliable-consumers-source";

/** The packages whose entry points get a reference page: the library and the local runtime. */
const PACKAGES = [".", "local"];

/**
 * Exported, but not an API a user calls: `reliable-consumers-local/cli` is the hand-over behind
 * `npx reliable-consumers local` (lib/cli.ts).
 */
const NOT_REFERENCE = new Set(["reliable-consumers-local/cli"]);

/** The navigation's group of the entry points (typedoc.json's `groupOrder` places it). */
const REFERENCE_GROUP = "API reference";

/** One documented entry point: its import specifier and its source file. */
export interface DocEntryPoint {
  /** What a user imports: `reliable-consumers/sqs`. */
  readonly name: string;
  /** Absolute path of the TypeScript source. */
  readonly file: string;
}

/** Every entry point of both packages' `exports` that has TypeScript sources, in manifest order. */
export function docEntryPoints(): DocEntryPoint[] {
  return PACKAGES.flatMap((dir) => {
    const pkg = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) as {
      name: string;
      exports: Record<string, string | Record<string, string>>;
    };
    return Object.entries(pkg.exports).flatMap(([subpath, target]) => {
      const source = typeof target === "object" ? target[SOURCE_CONDITION] : undefined;
      const name = subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
      if (!source || NOT_REFERENCE.has(name)) return [];
      return [{ name, file: resolve(root, dir, source) }];
    });
  });
}

/**
 * Builds the site into `out`. Resolves with the number of warnings and errors TypeDoc reported
 * (the build fails on any: typedoc.json's `treatWarningsAsErrors`).
 */
export async function buildDocs(out: string): Promise<number> {
  const entries = docEntryPoints();
  const app = await Application.bootstrapWithPlugins({
    options: join(root, "typedoc.json"),
    entryPoints: entries.map((e) => e.file),
    out,
    logLevel: LogLevel.Warn,
  });
  // TypeDoc names a module after its path (`lib/sqs`); a user imports `reliable-consumers/sqs`.
  const byFile = new Map(entries.map((e) => [e.file, e.name]));
  const getEntryPoints = app.getEntryPoints.bind(app);
  app.getEntryPoints = (): DocumentationEntryPoint[] | undefined =>
    getEntryPoints()?.map((e) => ({
      ...e,
      displayName: byFile.get(resolve(e.sourceFile.fileName)) ?? e.displayName,
    }));

  // In the navigation, the entry points sit under "API reference" beside the guides, not "Modules".
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (_context, reflection) => {
    if (!reflection.kindOf(ReflectionKind.Module)) return;
    reflection.comment ??= new Comment();
    reflection.comment.blockTags.push(new CommentTag("@group", [{ kind: "text", text: REFERENCE_GROUP }]));
  });

  const project = await app.convert();
  if (!project) return Math.max(1, app.logger.errorCount);
  app.validate(project);
  if (app.logger.hasErrors() || app.logger.hasWarnings())
    return app.logger.errorCount + app.logger.warningCount;
  await app.generateOutputs(project);
  return app.logger.errorCount + app.logger.warningCount;
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: "string", default: join(root, "site") } } });
  const problems = await buildDocs(resolve(values.out));
  if (problems > 0) {
    console.error(`docs: ${problems} warning(s) or error(s) above; the site is not written`);
    process.exit(1);
  }
  console.log(`docs: ${resolve(values.out)}/index.html`);
}
