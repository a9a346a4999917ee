import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

/** Debian's Chromium, which scripts/setup.sh installs (browser downloads do not work here). */
export const CHROMIUM = process.env.RC_CHROMIUM ?? "/usr/bin/chromium";

/** The flags every test browser gets: headless, no sandbox (root in CI), nothing that calls out. */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface TestBrowser {
  readonly context: BrowserContext;
  readonly page: Page;
  /** What the page logged as errors (uncaught exceptions, console.error). */
  readonly errors: string[];
  close(): Promise<void>;
}

/**
 * A fresh headless Chromium with its own user-data-dir, one page, every wait bounded: each test
 * opens its own and closes it, so no test sees another's cookies, cache or open stream.
 */
export async function openBrowser(options: { timeoutMs?: number } = {}): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `no Chromium at ${CHROMIUM}: run 'bash scripts/setup.sh' (it installs Debian's chromium: apt-get install -y chromium)`,
    );
  const dataDir = mkdtempSync(join(tmpdir(), "rc-chromium-"));
  const context = await chromium.launchPersistentContext(dataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 900 },
    timeout: 60_000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(options.timeoutMs ?? 30_000);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 40[35]/.test(m.text())) errors.push(m.text());
  });
  return {
    context,
    page,
    errors,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs `f` with a fresh browser, closed whatever happens. */
export async function withBrowser<T>(f: (b: TestBrowser) => Promise<T>): Promise<T> {
  const b = await openBrowser();
  try {
    return await f(b);
  } finally {
    await b.close();
  }
}
