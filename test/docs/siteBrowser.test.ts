import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, normalize, relative, sep } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withBrowser } from "../support/browser.ts";

/**
 * The documentation site in a real browser (Debian's Chromium, headless): `npm run docs` builds it
 * from this checkout into a temp dir (so a fresh clone needs nothing built first; DOCS_SITE=<dir>
 * checks a site built already), a static server on 127.0.0.1 serves it, and every page is opened.
 * Each page must have an h1; every link from one page of the site to another must name a page or
 * file that exists and, with a #fragment, an element of that page; and no page may fetch anything
 * from another origin (the site works offline).
 */
const REPO = join(import.meta.dirname, "..", "..");
const built = !process.env.DOCS_SITE;
const site = process.env.DOCS_SITE ?? mkdtempSync(join(tmpdir(), "rc-docs-site-"));
let server: Server;
let origin: string;

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".css": "text/css",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
};

/** Every file of the site, as a path relative to its root with forward slashes. */
function siteFiles(dir = site): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? siteFiles(join(dir, e.name)) : [relative(site, join(dir, e.name)).split(sep).join("/")],
  );
}

beforeAll(async () => {
  if (built) {
    execFileSync(join(REPO, "node_modules", ".bin", "tsx"), ["scripts/docs.ts", "--out", site], {
      cwd: REPO,
      stdio: "pipe",
    });
  }
  server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
    // The browser asks for a favicon of its own accord; the site has none.
    if (path === "/favicon.ico") return res.writeHead(204).end();
    const file = join(site, path.endsWith("/") ? `${path}index.html` : path);
    if (!file.startsWith(site) || !existsSync(file) || !statSync(file).isFile())
      return res.writeHead(404).end();
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 600_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  if (built) rmSync(site, { recursive: true, force: true });
});

/** What a page holds that the checks need, read in the browser after its scripts ran. */
interface PageFacts {
  readonly h1: string[];
  readonly ids: string[];
  readonly links: string[];
}

describe("the documentation site in Chromium", () => {
  it("every page has an h1, every internal link resolves (page and #fragment), nothing is fetched from elsewhere", async () => {
    const files = siteFiles();
    const pages = files.filter((f) => f.endsWith(".html")).sort();
    expect(pages).toContain("index.html");
    // The guides and one reference page per entry point of both packages.
    const modules = pages.filter((p) => p.startsWith("modules/"));
    expect(modules.length).toBeGreaterThanOrEqual(7);
    expect(pages.filter((p) => p.startsWith("documents/")).length).toBeGreaterThanOrEqual(10);

    const facts = new Map<string, PageFacts>();
    const foreign: string[] = [];
    const failedResources: string[] = [];
    const scriptErrors: string[] = [];
    // The navigation is one tree (assets/navigation.js) that TypeDoc's script renders on every
    // page, relative to the page: its links are read, once built, on the first page of each folder.
    const withNavigation = new Set([
      ...new Map(pages.map((p) => [p.includes("/") ? p.slice(0, p.indexOf("/")) : "", p])).values(),
    ]);
    await withBrowser(async ({ context, errors }) => {
      await context.route("**/*", (route) => {
        const url = route.request().url();
        if (url.startsWith(origin)) return route.continue();
        foreign.push(url);
        return route.abort();
      });
      context.on("response", (r) => {
        if (r.status() >= 400) failedResources.push(`${r.status()} ${r.url()}`);
      });
      // A few pages at once: each waits mostly on its own scripts.
      const queue = [...pages];
      const open = async () => {
        const page = await context.newPage();
        page.on("pageerror", (e) => scriptErrors.push(`${page.url()}: ${e.message}`));
        page.on("console", (m) => {
          if (m.type() === "error") scriptErrors.push(`${page.url()}: ${m.text()}`);
        });
        for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
          await page.goto(`${origin}/${path}`, { waitUntil: "load" });
          if (withNavigation.has(path))
            await page.locator("#tsd-nav-container a").first().waitFor({ state: "attached" });
          facts.set(path, {
            h1: (await page.locator("h1").allTextContents()).map((h) => h.trim()),
            ids: await page
              .locator("[id], a[name]")
              .evaluateAll((els) => els.map((e) => e.id || e.getAttribute("name") || "")),
            links: await page
              .locator("a[href]")
              .evaluateAll((els) => els.map((a) => (a as unknown as { href: string }).href)),
          });
        }
        await page.close();
      };
      await Promise.all([open(), open(), open()]);
      expect(errors).toEqual([]);
    });
    expect(scriptErrors, "errors the pages logged").toEqual([]);
    expect(facts.size).toBe(pages.length);
    expect(failedResources, "resources the pages asked for that the site lacks").toEqual([]);

    const withoutHeading = pages.filter((p) => !facts.get(p)!.h1.some((h) => h.length > 0));
    expect(withoutHeading, "pages without an h1").toEqual([]);

    const known = new Set(files);
    const broken: string[] = [];
    for (const [from, { links }] of facts) {
      for (const href of new Set(links)) {
        if (!href.startsWith(origin)) continue;
        const url = new URL(href);
        let target = decodeURIComponent(url.pathname).slice(1);
        if (target === "" || target.endsWith("/")) target += "index.html";
        if (!known.has(target)) {
          broken.push(`${from} → ${href}: no such page`);
          continue;
        }
        const fragment = decodeURIComponent(url.hash.slice(1));
        const targetFacts = facts.get(target);
        if (fragment && targetFacts && !targetFacts.ids.includes(fragment)) {
          broken.push(`${from} → ${href}: no #${fragment} on ${target}`);
        }
      }
    }
    expect(broken, "broken internal links").toEqual([]);
    expect(foreign, "requests to other origins").toEqual([]);
  }, 1_800_000);
});
