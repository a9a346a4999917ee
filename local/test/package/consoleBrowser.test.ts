import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withBrowser } from "../../../test/support/browser.ts";

/**
 * The local console in a real browser (Debian's Chromium, headless), on `reliable-consumers-local`
 * run from the packed tarballs in a copy of examples/consumer-app, as a user gets it: the page is
 * the built one in dist/, served offline. `local` starts once; each test opens its own browser and
 * sends its own messages, so none depends on another, and every wait has its bound.
 */
const REPO = join(import.meta.dirname, "..", "..", "..");
const work = mkdtempSync(join(tmpdir(), "rc-console-"));
const app = join(work, "consumer-app");
// No NODE_OPTIONS (the source condition would point the app at lib/), no AWS_ENDPOINT_URL* (they
// would be taken for emulators the user runs); Node 24 of the repository first on PATH.
const env = {
  ...Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== "NODE_OPTIONS" && !k.startsWith("AWS_ENDPOINT_URL")),
  ),
  PATH: `${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}`,
};
const credentials = { accessKeyId: "local", secretAccessKey: "local" };

let local: ChildProcess | undefined;
let output = "";
let consoleUrl: URL;
let sqs: SQSClient;
const names = { orders: "", dlq: "", consumer: "" };

async function waitFor(pattern: RegExp, ms: number): Promise<RegExpExecArray> {
  const until = Date.now() + ms;
  for (;;) {
    const m = pattern.exec(output);
    if (m) return m;
    if (Date.now() > until || local?.exitCode != null)
      throw new Error(`no ${pattern} after ${ms} ms (exit ${local?.exitCode}):\n${output.slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  const run = (cmd: string, args: string[], cwd: string) =>
    execFileSync(cmd, args, { cwd, env, encoding: "utf8", stdio: "pipe" });
  // The library first: the local package compiles against its built declarations.
  const tarballs = [[], ["-w", "reliable-consumers-local"]].map((workspace) => {
    const packed = run("npm", ["pack", ...workspace, "--pack-destination", work, "--json"], REPO);
    const { filename } = (JSON.parse(packed.slice(packed.indexOf("["))) as Array<{ filename: string }>)[0]!;
    return join(work, filename);
  });
  cpSync(join(REPO, "examples", "consumer-app"), app, {
    recursive: true,
    filter: (src) => !/node_modules|cdk\.out|package-lock\.json/.test(src),
  });
  // With the optional peer the local IAM enforcement needs, as `local` tells a user to install it.
  const manifest = JSON.parse(readFileSync(join(REPO, "local", "package.json"), "utf8")) as {
    devDependencies: Record<string, string>;
  };
  const iamSimulate = `@cloud-copilot/iam-simulate@${manifest.devDependencies["@cloud-copilot/iam-simulate"]}`;
  run(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--save-exact", ...tarballs, iamSimulate],
    app,
  );
  // The installed bin itself (not through npx), so that SIGINT reaches it.
  local = spawn(
    join(app, "node_modules", ".bin", "reliable-consumers-local"),
    ["--app", "npx tsx bin/app.ts"],
    {
      cwd: app,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  local.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  local.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const ready = await waitFor(/local: ready; console (http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+);/, 300_000);
  consoleUrl = new URL(ready[1]!);
  names.orders = /EventSourceMapping\s+SQS (\S+) → ConsumerApp-OrderConsumer/.exec(output)![1]!;
  names.consumer = /→ (ConsumerApp-OrderConsumer\S+)/.exec(output)![1]!;
  names.dlq = /^\s+(ConsumerApp-OrdersDlq\S+)\s+http/m.exec(output)![1]!;
  sqs = new SQSClient({
    region: "us-east-1",
    endpoint: /export AWS_ENDPOINT_URL_SQS=(\S+)/.exec(output)![1]!,
    credentials,
  });
}, 600_000);

afterAll(async () => {
  sqs?.destroy();
  if (local && local.exitCode === null) {
    const exited = new Promise((r) => local!.once("exit", r));
    local.kill("SIGINT");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (local.exitCode === null) local.kill("SIGKILL");
  }
  rmSync(work, { recursive: true, force: true });
}, 60_000);

const queueUrl = (name: string) => new RegExp(`^\\s+${name}\\s+(http\\S+)$`, "m").exec(output)![1]!;
const at = (hash: string) => `${consoleUrl.href}${hash}`;

describe("the local console in Chromium, on examples/consumer-app", () => {
  it("lists the app's queues and functions, live", async () => {
    await withBrowser(async ({ page, errors }) => {
      await page.goto(at("#/"));
      await page.getByTestId("live").filter({ hasText: "live" }).waitFor();
      const queues = page.getByTestId("resources-queue");
      await expect.poll(() => queues.textContent()).toContain(names.orders);
      expect(await queues.textContent()).toContain(names.dlq);
      expect(await page.getByTestId("resources-function").textContent()).toContain(names.consumer);
      expect(await page.getByTestId("endpoints").textContent()).toMatch(
        /export AWS_ENDPOINT_URL_SQS=http:\/\/127\.0\.0\.1:\d+/,
      );
      await page.getByTestId("nav-queues").click();
      await page.getByTestId("queues").getByText(names.orders, { exact: true }).first().waitFor();
      await page.getByTestId("nav-functions").click();
      await page.getByTestId("functions").getByText(names.consumer).first().waitFor();
      expect(errors).toEqual([]);
    });
  }, 120_000);

  it("shows a poison message in the DLQ with its x-last-error; replay moves it, the counts change and the function's log shows the run", async () => {
    const marker = `poison-${Date.now()}`;
    const sentPoison = await sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl(names.orders), MessageBody: `{"${marker}": <not json` }),
    );
    await withBrowser(async ({ page, errors }) => {
      await page.goto(at("#/functions"));
      const invocations = page.getByTestId(`invocations-${names.consumer}`);
      await page.goto(at(`#/queues/${names.dlq}`));
      const card = page.getByTestId("message").filter({ hasText: marker });
      await card.waitFor({ timeout: 90_000 });
      expect(await card.getByTestId("failure-context").textContent()).toMatch(
        /x-last-error\s*InvalidJsonError: /,
      );
      expect(await card.getByTestId("body").textContent()).toBe(`{"${marker}": <not json`);
      // CONSOLE_SCREENSHOT=<file.png> keeps this view as a picture (the README's is made so).
      if (process.env.CONSOLE_SCREENSHOT) await page.screenshot({ path: process.env.CONSOLE_SCREENSHOT });
      const parkedId = (await card.getByTestId("message-id").textContent())!;
      // The consumer's log, its WARN lines: how many records it has parked so far.
      const parkedLines = async () => {
        await page.goto(at(`#/functions/${names.consumer}`));
        await page.getByTestId("chart-invocations").locator("canvas").waitFor();
        await page.getByTestId("log-level").selectOption("WARN");
        const text = (await page.getByTestId("log-lines").textContent()) ?? "";
        return text.split("record parked in the dead-letter queue").length - 1;
      };
      await expect.poll(parkedLines, { timeout: 30_000 }).toBeGreaterThan(0);
      const parkedBefore = await parkedLines();
      await page.goto(at("#/functions"));
      const before = Number(await invocations.textContent());
      expect(before).toBeGreaterThan(0);

      await page.goto(at(`#/queues/${names.dlq}`));
      await card.getByTestId("select").check();
      await page.getByTestId("dry-run").click();
      await expect
        .poll(() => page.getByTestId("action-result").textContent(), { timeout: 30_000 })
        .toMatch(/^dry run: would move \d+ of/);
      await card.getByTestId("select").check();
      await page.getByTestId("replay-selected").click();
      await expect
        .poll(() => page.getByTestId("action-result").textContent(), { timeout: 30_000 })
        .toMatch(/^moved 1 of \d+ seen \(1 → /);
      // Still poison: the consumer runs it again and parks a new copy (a new message, its context kept).
      const copy = page.getByTestId("message").filter({ hasText: marker }).filter({ hasNotText: parkedId });
      await copy.waitFor({ timeout: 90_000 });
      expect(await page.getByTestId("message").filter({ hasText: parkedId }).count()).toBe(0);
      expect(await copy.getByTestId("failure-context").textContent()).toMatch(
        /x-last-error\s*InvalidJsonError: /,
      );

      await page.goto(at("#/functions"));
      await expect
        .poll(async () => Number(await invocations.textContent()), { timeout: 30_000 })
        .toBeGreaterThan(before);
      // The run is in the function's log: one more record parked, live.
      await expect.poll(parkedLines, { timeout: 30_000 }).toBeGreaterThan(parkedBefore);
      await page.getByTestId("log-level").selectOption("");
      // Filtered by the message's id: its own lines only (the record parked), none of the platform's.
      await page.getByTestId("log-message-id").fill(sentPoison.MessageId!);
      const own = (await page.getByTestId("log-lines").textContent())!;
      expect(own).toContain("record parked in the dead-letter queue");
      expect(own).not.toContain("START RequestId");
      expect(errors).toEqual([]);
    });
  }, 240_000);

  it("traces one message: received, claimed, handler run", async () => {
    const orderId = `o-trace-${Date.now()}`;
    const sent = await sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl(names.orders), MessageBody: JSON.stringify({ orderId }) }),
    );
    await withBrowser(async ({ page, errors }) => {
      await page.goto(at(`#/trace/${sent.MessageId}`));
      const steps = page.getByTestId("trace-steps");
      await steps.getByTestId("step-handler").waitFor({ timeout: 90_000 });
      await steps.getByTestId("step-claimed").waitFor({ timeout: 30_000 });
      const text = (await steps.textContent())!;
      expect(text).toContain(`sqs ${names.orders}`);
      expect(text).toContain(`${sent.MessageId} in a batch of`);
      expect(text).toMatch(new RegExp(`dedup key \\S+#${orderId}: COMPLETED`));
      expect(text).toContain("done: the response did not report it failed");
      // The business key finds the same steps.
      await page.goto(at(`#/trace/${orderId}`));
      await page.getByTestId("trace-steps").getByTestId("step-received").waitFor();
      expect(errors).toEqual([]);
    });
  }, 180_000);

  it("refuses a request without the token or with a foreign Host, an action that is not a POST with the token, and listens on 127.0.0.1 only", async () => {
    const port = Number(consoleUrl.port);
    const token = consoleUrl.searchParams.get("token")!;
    const call = (path: string, headers: Record<string, string> = {}, method = "GET") =>
      new Promise<number>((resolve, reject) => {
        const r = request({ host: "127.0.0.1", port, path, method, headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        r.on("error", reject);
        r.end(method === "POST" ? "{}" : undefined);
      });
    expect(await call(`/?token=${token}`)).toBe(200);
    expect(await call("/")).toBe(403);
    expect(await call("/api/queues")).toBe(403);
    expect(await call("/api/events")).toBe(403);
    expect(await call(`/?token=${token}`, { Host: `rebound.example:${port}` })).toBe(403);
    expect(await call(`/api/queues?token=${token}`, { Host: "rebound.example" })).toBe(403);
    const json = { "Content-Type": "application/json" };
    expect(await call(`/api/actions/purge?token=${token}`, json, "POST")).toBe(403);
    expect(await call(`/api/actions/purge?token=${token}`)).toBe(405);
    expect(
      await call(
        "/api/actions/purge",
        { ...json, "X-Console-Token": token, Origin: "http://rebound.example" },
        "POST",
      ),
    ).toBe(403);
    await withBrowser(async ({ page }) => {
      const res = await page.goto(`http://127.0.0.1:${port}/`);
      expect(res?.status()).toBe(403);
      expect(await page.textContent("body")).toContain("no valid token");
    });
    // Any other address of this machine: loopback ones other than 127.0.0.1, IPv6, every interface's.
    const others = [
      "127.0.0.2",
      "::1",
      ...Object.values(networkInterfaces())
        .flat()
        .filter((a) => a && !a.internal)
        .map((a) => a!.address),
    ];
    for (const host of others) {
      const outcome = await new Promise<string>((resolve) => {
        const s = connect({ host, port, timeout: 3_000 });
        s.once("connect", () => {
          s.destroy();
          resolve("connected");
        });
        s.once("timeout", () => {
          s.destroy();
          resolve("timeout");
        });
        s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
      });
      expect(outcome, host).not.toBe("connected");
    }
  }, 120_000);
});
