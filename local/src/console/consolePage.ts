/**
 * The console's page: one HTML document, one script and one stylesheet, served by the console
 * itself (no CDN: a user's machine may be offline). In the published package they are built by
 * `npm run build` into `local/dist/console/page/`; from this repository's sources the script is
 * bundled once at start with esbuild (a devDependency), so a checkout never serves a stale build.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export interface PageAssets {
  readonly script: string;
  readonly style: string;
}

/** The script's entry and the page's own stylesheet, beside this module in the sources. */
export const PAGE_SOURCES = {
  entry: fileURLToPath(new URL("./page/main.ts", import.meta.url)),
  style: fileURLToPath(new URL("./page/console.css", import.meta.url)),
} as const;

/** The esbuild options the build and the source mode share. */
export const PAGE_BUILD_OPTIONS = {
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  logLevel: "silent",
} as const;

/** The stylesheet: uPlot's own, then the page's. */
export async function pageStyle(): Promise<string> {
  const uplotCss = createRequire(import.meta.url).resolve("uplot/dist/uPlot.min.css");
  return `${await readFile(uplotCss, "utf8")}\n${await readFile(PAGE_SOURCES.style, "utf8")}`;
}

/** The page's assets: the built ones of the package, or bundled now from the sources. */
export async function loadPageAssets(): Promise<PageAssets> {
  if (!import.meta.url.endsWith(".ts")) {
    const dir = new URL("./page/", import.meta.url);
    const [script, style] = await Promise.all([
      readFile(new URL("console.js", dir), "utf8"),
      readFile(new URL("console.css", dir), "utf8"),
    ]);
    return { script, style };
  }
  const { build } = await import("esbuild");
  const out = await build({ ...PAGE_BUILD_OPTIONS, entryPoints: [PAGE_SOURCES.entry], write: false });
  return { script: out.outputFiles[0]!.text, style: await pageStyle() };
}

/** The HTML document: the token goes into the asset URLs and a meta tag (it is ours: URL-safe base64). */
export function pageHtml(token: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="console-token" content="${token}">
<title>reliable-consumers local console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/console.css?token=${token}">
<script defer src="/assets/console.js?token=${token}"></script>
</head>
<body><noscript>The console needs JavaScript.</noscript></body>
</html>
`;
}
