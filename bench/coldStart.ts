/**
 * Cold start of an SQS-only consumer with idempotency, ours against the Powertools equivalent
 * (BatchProcessor + makeIdempotent + DynamoDBPersistenceLayer in Middy), both bundled with the
 * esbuild settings of `ConsumerFunction` (BUNDLING: ESM, node24, minified, the SDK bundled):
 * bundle bytes, and module init time as the median over fresh Node processes (the time to import
 * the bundle, which is what Lambda's init phase spends on it). Needs no emulators.
 *
 *   npm run bench -- --only coldstart [--coldstart-runs 7]
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build, type Metafile } from "esbuild";
import { BUNDLING } from "reliable-consumers/cdk";

const ROOT = join(import.meta.dirname, "..");

/** The two handlers, written as a user would. */
const HANDLERS = {
  ours: `
import { sqsConsumer } from "reliable-consumers/sqs";
export const handler = sqsConsumer(async ({ body }) => { void body; }, {
  key: (order) => order.orderId,
  idempotency: { tableName: process.env.DEDUP_TABLE_NAME },
});
`,
  powertools: `
import middy from "@middy/core";
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
const persistenceStore = new DynamoDBPersistenceLayer({ tableName: process.env.DEDUP_TABLE_NAME });
const config = new IdempotencyConfig({ eventKeyJmesPath: "powertools_json(body).orderId" });
const processRecord = makeIdempotent(async (record) => { void JSON.parse(record.body); }, { persistenceStore, config });
const processor = new BatchProcessor(EventType.SQS);
export const handler = middy(async (event, context) => {
  config.registerLambdaContext(context);
  return processPartialResponse(event, processRecord, processor, { context });
});
`,
} as const;
type Side = keyof typeof HANDLERS;

/** BUNDLING (the CDK's BundlingOptions) in esbuild's terms. */
async function bundle(side: Side, outdir: string): Promise<{ file: string; meta: Metafile }> {
  const file = join(outdir, side, "index.mjs");
  const result = await build({
    stdin: { contents: HANDLERS[side], resolveDir: ROOT, loader: "ts", sourcefile: `${side}.ts` },
    outfile: file,
    bundle: true,
    platform: "node",
    format: "esm",
    target: BUNDLING.target ?? "node24",
    minify: BUNDLING.minify ?? true,
    keepNames: BUNDLING.keepNames ?? false,
    sourcemap: BUNDLING.sourceMap ?? false,
    sourcesContent: BUNDLING.sourcesContent ?? true,
    mainFields: [...(BUNDLING.mainFields ?? ["module", "main"])],
    external: [...(BUNDLING.externalModules ?? [])],
    ...(BUNDLING.banner ? { banner: { js: BUNDLING.banner } } : {}),
    // Our package resolves to its sources in this repository (the same code as dist/). esbuild
    // drops its default `module` condition once conditions are given, and the AWS SDK's packages
    // would then resolve to their CommonJS builds, which cannot be tree-shaken (140 kB more on each
    // side): `module` is named again, as a user's ConsumerFunction (no custom conditions) has it.
    conditions: ["reliable-consumers-source", "module"],
    metafile: true,
    logLevel: "silent",
  });
  // For esbuild's analyser (https://esbuild.github.io/analyze/) when one side grows.
  writeFileSync(join(outdir, side, "meta.json"), JSON.stringify(result.metafile));
  return { file, meta: result.metafile };
}

/** One fresh process: ms to import the bundle (its module init), as Lambda's init would. */
function initMs(file: string): number {
  const probe = `const t0 = performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now() - t0));`;
  const result = spawnSync(process.execPath, ["--enable-source-maps", "--input-type=module", "-e", probe], {
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
      DEDUP_TABLE_NAME: "dedup",
      POWERTOOLS_SERVICE_NAME: "coldstart",
      AWS_LAMBDA_FUNCTION_NAME: "coldstart",
    },
  });
  if (result.status !== 0) throw new Error(`init of ${file} failed: ${result.stderr}`);
  return Number(result.stdout);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** The packages that put the most bytes into a bundle (what to look at when ours is larger). */
function largestPackages(meta: Metafile, top = 8): Array<{ module: string; bytes: number }> {
  const bytes = new Map<string, number>();
  for (const output of Object.values(meta.outputs)) {
    for (const [path, input] of Object.entries(output.inputs)) {
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
      const key = m ? m[1]! : path.split("/").slice(0, 2).join("/");
      bytes.set(key, (bytes.get(key) ?? 0) + input.bytesInOutput);
    }
  }
  return [...bytes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([module, b]) => ({ module, bytes: b }));
}

export async function runColdStartBench(runs = 7) {
  const outdir = join(ROOT, ".tmp", "bench-coldstart");
  rmSync(outdir, { recursive: true, force: true });
  for (const side of Object.keys(HANDLERS)) mkdirSync(join(outdir, side), { recursive: true });
  try {
    const built = { ours: await bundle("ours", outdir), powertools: await bundle("powertools", outdir) };
    const times: Record<Side, number[]> = { ours: [], powertools: [] };
    // Alternating, so load on the machine falls on both sides alike.
    for (let i = 0; i < runs; i++) {
      for (const side of ["ours", "powertools"] as const) times[side].push(initMs(built[side].file));
    }
    const side = (s: Side) => {
      const code = readFileSync(built[s].file);
      return {
        bundleBytes: code.length,
        gzipBytes: gzipSync(code).length,
        initMsMedian: Number(median(times[s]).toFixed(1)),
        initMs: times[s].map((t) => Number(t.toFixed(1))),
        largestPackages: largestPackages(built[s].meta),
      };
    };
    const ours = side("ours");
    const powertools = side("powertools");
    console.error(
      `cold start (${runs} fresh processes each): ours ${ours.bundleBytes} B, ${ours.initMsMedian} ms · ` +
        `Powertools ${powertools.bundleBytes} B, ${powertools.initMsMedian} ms`,
    );
    return {
      runs,
      ours,
      powertools,
      bytesRatio: Number((ours.bundleBytes / powertools.bundleBytes).toFixed(3)),
      initRatio: Number((ours.initMsMedian / powertools.initMsMedian).toFixed(3)),
    };
  } finally {
    console.error(`cold start: bundles and esbuild metafiles in ${outdir}`);
  }
}
