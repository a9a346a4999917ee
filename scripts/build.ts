/**
 * `npm run build` (and `npm pack`, through `prepack`): the library's published package in `dist/`.
 *  1. tsc over lib/ (tsconfig.build.json): ESM JavaScript, declarations, source maps;
 *  2. the documentation gate: API Extractor over the declarations just emitted (the check of
 *     `npm run api -- --check`, reusing dist/ instead of emitting them again). An export or member
 *     it reaches with no TSDoc summary (`ae-undocumented`) fails the build, and dist/ is removed,
 *     so an undocumented surface is never packed. Only this gap fails here: a report that differs
 *     from api/ is the API test's business (`npm run api`), not the build's;
 *  3. the prebuilt handlers bundled with esbuild into `dist/assets/<name>/index.mjs`, the way
 *     aws-cdk-lib ships its custom-resource handlers, so a user's app deploys them without bundling.
 * The local runtime is its own package (local/, `npm run build -w reliable-consumers-local`).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, rmSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { PREBUILT_ESBUILD_OPTIONS, PREBUILT_HANDLERS } from "../lib/cdk/prebuiltHandlers.ts";
import { apiReports } from "./apiReport.ts";

const root = join(import.meta.dirname, "..");
const dist = join(root, "dist");

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status})`);
}

const t0 = Date.now();
rmSync(dist, { recursive: true, force: true });
run(join(root, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.build.json"]);
chmodSync(join(dist, "cli.js"), 0o755);

const gaps = apiReports({ update: false, declarations: dist }).flatMap((r) =>
  r.undocumented.map((message) => `${r.entry}: ${message}`),
);
if (gaps.length > 0) {
  rmSync(dist, { recursive: true, force: true });
  for (const gap of gaps) console.error(gap);
  throw new Error(`${gaps.length} exports or members have no TSDoc comment (see above); dist/ removed`);
}

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
console.error(`build: dist/ in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
