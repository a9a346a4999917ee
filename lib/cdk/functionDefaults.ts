import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { type BundlingOptions, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";

/**
 * This package's root (in this repository: the repository root, where the reference service's
 * handlers are). Not a default of `ConsumerFunction`: NodejsFunction finds the user's project.
 */
export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The runtime of every function the constructs create: Node.js 24. */
export const FUNCTION_RUNTIME = lambda.Runtime.NODEJS_24_X;
/** The architecture of every function the constructs create: ARM64 (Graviton). */
export const FUNCTION_ARCHITECTURE = lambda.Architecture.ARM_64;

/**
 * What every bundle is built with, `ConsumerFunction`'s (`BUNDLING`) and the prebuilt handlers'
 * (`PREBUILT_ESBUILD_OPTIONS`): ESM for Node 24, minified, class names kept, and a `require` for
 * the CommonJS dependencies that call it.
 */
export const ESBUILD_SETTINGS = {
  target: "node24",
  minify: true,
  // The library's error names are literals; a user's own subclass (`class CardDeclined extends
  // PermanentError {}`) is named after its class, and that name goes into the DLQ context: keep it.
  keepNames: true,
  mainFields: ["module", "main"],
  banner: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);",
} as const;

/**
 * esbuild options for every function: `ESBUILD_SETTINGS`, with source maps (and
 * `NODE_OPTIONS=--enable-source-maps`, set by `ConsumerFunction`). The AWS SDK is bundled, not
 * taken from the runtime: the code runs the SDK versions of the app's lock file. `ConsumerFunction`
 * merges its `bundling` prop over these.
 */
export const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  ...ESBUILD_SETTINGS,
  mainFields: [...ESBUILD_SETTINGS.mainFields],
  sourceMap: true,
  sourcesContent: false,
  externalModules: [],
};

/** Throws a clear error when a handler file is missing. */
export function assertEntryExists(entry: string, what: string): void {
  if (!existsSync(entry)) {
    throw new Error(`${what}: handler entry ${entry} does not exist`);
  }
}
