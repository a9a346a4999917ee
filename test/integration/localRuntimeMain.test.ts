import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..", "..");

/**
 * The README's main command, end to end: its own emulators, the synthesized CDK app, the bundled
 * functions, 500 orders with duplicates, poison and long jobs. Slow (synth + cold starts), so one run.
 */
describe("npm run local", () => {
  it("--messages 500: nothing lost, no duplicate effect, every figure consistent", {
    timeout: 420_000,
  }, async () => {
    const child = spawn("npm", ["run", "-s", "local", "--", "--messages", "500"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PATH: `${ROOT}/node_modules/.bin:${process.env.PATH ?? ""}` },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((r) => child.on("exit", r));
    const last = stdout.trim().split("\n").at(-1) ?? "";
    expect(last, stderr.slice(-3000)).toMatch(/^RESULT \{/);
    const result = JSON.parse(last.slice("RESULT ".length)) as Record<string, number>;
    expect(code, stderr.slice(-3000)).toBe(0);
    expect(result.sent).toBe(500);
    expect(result.lost).toBe(0);
    expect(result.duplicateEffects).toBe(0);
    expect(result.ordersStored).toBe(result.unique);
    expect(result.outboxPublished).toBe(result.unique);
    expect(result.kafkaConsumed).toBeGreaterThanOrEqual(result.unique ?? 0);
    // Every poison message is parked; one can be parked twice if its batch failed after parking it
    // (at-least-once, e.g. a timeout on a starved machine), so at least, not exactly.
    expect(result.dlq).toBeGreaterThanOrEqual(result.poison ?? 0);
    expect(result.duplicatesSuppressed).toBe(result.duplicateSends);
    expect(stderr).not.toContain("NOT EMULATED");
  });
});
