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
 * esbuild options for every function: ESM, minified, with source maps (and
 * `NODE_OPTIONS=--enable-source-maps`, set by `ConsumerFunction`). The AWS SDK is bundled, not
 * taken from the runtime: the code runs the SDK versions of the app's lock file. `ConsumerFunction`
 * merges its `bundling` prop over these.
 */
export const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: "node24",
  minify: true,
  // Error types are class names (`this.name = new.target.name`) and go into DLQ context: keep them.
  keepNames: true,
  sourceMap: true,
  sourcesContent: false,
  mainFields: ["module", "main"],
  externalModules: [],
  // Some CommonJS dependencies call require(); give ESM bundles one.
  banner: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);",
};

/** Throws a clear error when a handler file is missing. */
export function assertEntryExists(entry: string, what: string): void {
  if (!existsSync(entry)) {
    throw new Error(`${what}: handler entry ${entry} does not exist`);
  }
}
