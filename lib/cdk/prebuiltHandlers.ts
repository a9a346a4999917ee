import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { ESBUILD_SETTINGS } from "./functionDefaults.ts";

/** The library's own handlers, deployed from built JavaScript: name → source under `lib/handlers/`. */
export const PREBUILT_HANDLERS = {
  outboxRelay: "outboxRelay.ts",
  outboxSweeper: "outboxSweeper.ts",
  kafkaTopics: "kafkaTopics/handler.ts",
} as const;
/** The name of one of the library's prebuilt handlers. */
export type PrebuiltHandlerName = keyof typeof PREBUILT_HANDLERS;

/** The bundle's file and export: `index.mjs`, `handler`. */
export const PREBUILT_HANDLER = "index.handler";

/**
 * esbuild options of the prebuilt bundles: `ConsumerFunction`'s settings (`ESBUILD_SETTINGS`), in
 * esbuild's own terms, but without source maps, as aws-cdk-lib ships its custom-resource handlers:
 * the map of a minified bundle is 1.5 times its size, it would go into every function's asset and
 * made up half the tarball, and the kept names already make a stack trace readable.
 */
export const PREBUILT_ESBUILD_OPTIONS = {
  bundle: true,
  platform: "node",
  format: "esm",
  ...ESBUILD_SETTINGS,
  sourcemap: false,
  banner: { js: ESBUILD_SETTINGS.banner },
  logLevel: "silent",
} as const;

const here = dirname(fileURLToPath(import.meta.url));
/** Running from the TypeScript sources (this repository) rather than the published `dist/`. */
const fromSource = import.meta.url.endsWith(".ts");
const bundledFromSource = new Map<PrebuiltHandlerName, string>();

/**
 * The directory holding a prebuilt handler's bundle (`index.mjs`). In the published package
 * it is `dist/assets/<name>`, built by `npm run build` like aws-cdk-lib's custom-resource
 * handlers; from the sources it is bundled once per process from `lib/handlers/`, so a checkout
 * never deploys a stale build.
 */
export function prebuiltHandlerDir(name: PrebuiltHandlerName): string {
  if (!fromSource) return join(here, "..", "assets", name);
  const cached = bundledFromSource.get(name);
  if (cached) return cached;
  // esbuild is a devDependency of this repository; the published package never comes here.
  const esbuild = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
  const outdir = mkdtempSync(join(tmpdir(), `reliable-consumers-${name}-`));
  esbuild.buildSync({
    ...PREBUILT_ESBUILD_OPTIONS,
    mainFields: [...PREBUILT_ESBUILD_OPTIONS.mainFields],
    entryPoints: [join(here, "..", "handlers", PREBUILT_HANDLERS[name])],
    outfile: join(outdir, "index.mjs"),
  });
  bundledFromSource.set(name, outdir);
  // Synth copies the asset into the cloud assembly; the bundle itself lives as long as this process.
  process.once("exit", () => rmSync(outdir, { recursive: true, force: true }));
  return outdir;
}

/** A prebuilt handler as Lambda code (an asset of the bundle's directory). */
export function prebuiltHandlerCode(name: PrebuiltHandlerName): lambda.Code {
  return lambda.Code.fromAsset(prebuiltHandlerDir(name));
}
