/**
 * The public API, pinned: one API Extractor report per entry point of the `exports` of both
 * packages (the library, and the local runtime in local/), in `api/` (checked in). `npm run api`
 * writes them after a deliberate change of the surface;
 * `test/package/apiReport.test.ts` (so `npm test`) fails when the exported surface differs from
 * the reports, or when an export or a member it reaches has no TSDoc summary (API Extractor's
 * `ae-undocumented`, with no exemption; `npm run build` fails on that too).
 *
 *   npm run api            # update api/*.api.md
 *   npm run api -- --check # compare only (what the test does)
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CompilerState, Extractor, ExtractorConfig, ExtractorLogLevel } from "@microsoft/api-extractor";
import ts from "typescript";

const root = join(import.meta.dirname, "..");

export interface EntryReport {
  /** What a user imports: `reliable-consumers`, `reliable-consumers/sqs`, `reliable-consumers-local`... */
  readonly entry: string;
  readonly reportFile: string;
  /** The report differs from the checked-in one (in `--check` mode: not updated). */
  readonly changed: boolean;
  /**
   * Errors and warnings: a missing TSDoc comment, an export that cannot be analysed, and (in
   * `--check` mode) a report that differs.
   */
  readonly problems: string[];
  /** The subset of `problems` that are `ae-undocumented`: an export or member with no TSDoc summary. */
  readonly undocumented: string[];
}

/** The folders of the packages whose entry points are reported: the library and the local runtime. */
const PACKAGES = [".", "local"];

/** The `exports` subpaths with declarations of both packages, and the report file of each. */
export function apiEntryPoints(): Array<{
  entry: string;
  /** The package's folder (absolute): its package.json, and what `types` is relative to. */
  packageDir: string;
  types: string;
  source: string;
  reportName: string;
}> {
  return PACKAGES.flatMap((dir) => {
    const packageDir = join(root, dir);
    const pkg = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as {
      name: string;
      exports: Record<string, string | { types?: string; "reliable-consumers-source"?: string }>;
    };
    return Object.entries(pkg.exports).flatMap(([subpath, target]) => {
      if (typeof target !== "object" || !target.types || !target["reliable-consumers-source"]) return [];
      const entry = subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
      const suffix = subpath === "." ? "" : `-${subpath.slice(2).replaceAll("/", "-")}`;
      const source = join(packageDir, target["reliable-consumers-source"]);
      return [{ entry, packageDir, types: target.types, source, reportName: `${pkg.name}${suffix}.api.md` }];
    });
  });
}

/** Every name an entry point exports whose declaration has no TSDoc comment, as `entry: name (file)`. */
export function undocumentedExports(): string[] {
  const entries = apiEntryPoints();
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, "tsconfig.build.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  );
  if (!config) throw new Error("tsconfig.build.json could not be read");
  const program = ts.createProgram(
    entries.map((e) => e.source),
    { ...config.options, noEmit: true },
  );
  const checker = program.getTypeChecker();
  const missing: string[] = [];
  for (const { entry, source } of entries) {
    const file = program.getSourceFile(source);
    const module = file && checker.getSymbolAtLocation(file);
    if (!module) throw new Error(`${source}: not a module`);
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const documented =
        symbol.getDocumentationComment(checker).length > 0 || symbol.getJsDocTags(checker).length > 0;
      const where = symbol.declarations?.[0]?.getSourceFile().fileName.slice(root.length + 1) ?? "";
      if (!documented) missing.push(`${entry}: ${exported.name} (${where})`);
    }
  }
  return missing;
}

/**
 * Emits the declarations of lib/ (or of the project `tsconfig` names) into a temporary folder: what
 * `npm run build` ships as dist/*.d.ts.
 */
function emitDeclarations(outDir: string, tsconfig = "tsconfig.build.json"): void {
  const tsc = join(root, "node_modules", ".bin", "tsc");
  const args = ["-p", tsconfig, "--emitDeclarationOnly", "--sourceMap", "false"];
  const result = spawnSync(tsc, [...args, "--outDir", outDir], { cwd: root, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`tsc failed:\n${result.stdout}${result.stderr}`);
}

/**
 * Emits the declarations of local/src (what `npm run build -w reliable-consumers-local` ships).
 * local/tsconfig.build.json compiles against the library's built declarations (its dist/, which
 * need not exist here), so a tsconfig beside the output extends it and maps each of the library's
 * entry points to the declarations `emitDeclarations` wrote into `libDts`. The emitted files keep
 * the specifiers (`reliable-consumers/sqs`), so the report imports them as a user's code would.
 */
function emitLocalDeclarations(outDir: string, libDts: string): void {
  const paths = Object.fromEntries(
    apiEntryPoints()
      .filter((e) => e.packageDir === root)
      .map((e) => [e.entry, [join(libDts, e.types.replace(/^\.\/dist\//, ""))]]),
  );
  // `types: ["node"]` is looked up from the tsconfig's folder, a temporary one: point it home.
  const typeRoots = [join(root, "node_modules", "@types")];
  const tsconfig = join(outDir, "..", "tsconfig.local.json");
  const base = join(root, "local", "tsconfig.build.json");
  writeFileSync(tsconfig, JSON.stringify({ extends: base, compilerOptions: { paths, typeRoots } }));
  emitDeclarations(outDir, tsconfig);
}

/** API Extractor's configuration for one entry point, over the declarations in `dts`. */
function extractorConfig(
  dts: string,
  reportTempFolder: string,
  entry: ReturnType<typeof apiEntryPoints>[number],
): ExtractorConfig {
  return ExtractorConfig.prepare({
    configObjectFullPath: undefined,
    packageJsonFullPath: join(entry.packageDir, "package.json"),
    configObject: {
      projectFolder: entry.packageDir,
      mainEntryPointFilePath: join(dts, entry.types.replace(/^\.\/dist\//, "")),
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: "ES2024",
            lib: ["ES2024"],
            module: "NodeNext",
            moduleResolution: "NodeNext",
            types: ["node"],
            strict: true,
            skipLibCheck: true,
            allowImportingTsExtensions: true,
            noEmit: true,
          },
          include: [dts],
        },
      },
      apiReport: {
        enabled: true,
        reportFolder: join(root, "api"),
        reportTempFolder,
        reportFileName: entry.reportName,
        includeForgottenExports: false,
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Error } },
        extractorMessageReporting: {
          default: { logLevel: ExtractorLogLevel.Warning },
          // One package, no release stages (@public, @beta): every export is public.
          "ae-missing-release-tag": { logLevel: ExtractorLogLevel.None },
          // A type used by an export but not exported by its entry point (say, `Telemetry` in
          // ./sqs): it is reached from the entry point that does export it.
          "ae-forgotten-export": { logLevel: ExtractorLogLevel.None, addToApiReportFile: false },
          // Every export and every member it reaches needs a TSDoc summary (the report marks a gap
          // `(undocumented)`); a gap is a problem, so `--check`, the test and `npm run build` fail.
          "ae-undocumented": { logLevel: ExtractorLogLevel.Warning, addToApiReportFile: false },
        },
        tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
      },
    },
  });
}

function runExtractor(
  dts: string,
  config: ExtractorConfig,
  compilerState: CompilerState,
  update: boolean,
): Pick<EntryReport, "changed" | "problems" | "undocumented"> {
  const problems: string[] = [];
  const undocumented: string[] = [];
  const result = Extractor.invoke(config, {
    compilerState,
    localBuild: update,
    showVerboseMessages: false,
    messageCallback: (message) => {
      if (message.logLevel === ExtractorLogLevel.Error || message.logLevel === ExtractorLogLevel.Warning) {
        const text = message.formatMessageWithLocation(dts);
        problems.push(text);
        if (message.messageId === "ae-undocumented") undocumented.push(text);
      }
      message.handled = true;
    },
  });
  return { changed: result.apiReportChanged, problems, undocumented };
}

/** The reports of one package's entry points, over its declarations in `dts`: one TypeScript program for all. */
function reportGroup(
  dts: string,
  entries: ReturnType<typeof apiEntryPoints>,
  reportTempFolder: string,
  update: boolean,
): EntryReport[] {
  if (entries.length === 0) return [];
  const configs = entries.map((entry) => ({ entry, config: extractorConfig(dts, reportTempFolder, entry) }));
  const compilerState = CompilerState.create(configs[0]!.config, {
    additionalEntryPoints: configs.map((c) => c.config.mainEntryPointFilePath),
  });
  return configs.map(({ entry, config }) => ({
    entry: entry.entry,
    reportFile: join("api", entry.reportName),
    ...runExtractor(dts, config, compilerState, update),
  }));
}

/**
 * Runs API Extractor on every entry point, over the declarations in `declarations` (a `dist/` that
 * `npm run build` just emitted) or, by default, over declarations emitted once for the purpose.
 */
export function apiReports(options: { update: boolean; declarations?: string }): EntryReport[] {
  const work = mkdtempSync(join(tmpdir(), "reliable-consumers-api-"));
  try {
    const dts = options.declarations ?? join(work, "dts");
    if (options.declarations === undefined) emitDeclarations(dts);
    const entries = apiEntryPoints();
    const library = entries.filter((e) => e.packageDir === root);
    // Given the library's dist/ (npm run build), only the library's entry points are checked.
    const local = options.declarations === undefined ? entries.filter((e) => e.packageDir !== root) : [];
    const localDts = join(work, "local-dts");
    if (local.length > 0) emitLocalDeclarations(localDts, dts);
    return [
      ...reportGroup(dts, library, join(work, "api-temp"), options.update),
      ...reportGroup(localDts, local, join(work, "api-temp"), options.update),
    ];
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const update = !process.argv.includes("--check");
  const undocumented = undocumentedExports();
  for (const name of undocumented) console.error(`${name}: no TSDoc comment`);
  let failed = undocumented.length > 0;
  for (const r of apiReports({ update })) {
    for (const p of r.problems) console.error(`${r.entry}: ${p}`);
    if (r.changed) console.error(`${r.reportFile}: ${update ? "updated" : "differs from the exported API"}`);
    failed ||= r.problems.length > 0 || (!update && r.changed);
  }
  process.exitCode = failed ? 1 : 0;
}
