import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..", "..");

/**
 * The README's main command, end to end: its own emulators, the synthesized CDK app, the bundled
 * functions, 500 orders with duplicates, poison and long jobs. Slow (synth + cold starts), so one run.
 */
/** The run's own lines (progress, verdict, errors), without kafkajs's TimeoutNegativeWarning noise. */
const progress = (stderr: string) =>
  stderr
    .split("\n")
    .filter((l) => !/TimeoutNegativeWarning|Timeout duration was set|trace-warnings/.test(l))
    .join("\n")
    .slice(-4000);

describe("npm run local", () => {
  it("--messages 500: nothing lost, no duplicate effect, every figure consistent", {
    timeout: 600_000,
  }, async () => {
    // The run bounds its own wait (--timeout) and then reports what it found; the watchdog only
    // catches a hang, and either way the failure shows the run's progress lines.
    const child = spawn("npm", ["run", "-s", "local", "--", "--messages", "500", "--timeout", "360"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group, so the watchdog can kill npm, tsx and node together.
      detached: true,
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
    const watchdog = setTimeout(() => {
      stderr += "\n[test] no exit after 540 s: killing the run\n";
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    }, 540_000);
    const code = await new Promise<number | null>((r) => child.on("exit", r));
    clearTimeout(watchdog);
    const last = stdout.trim().split("\n").at(-1) ?? "";
    expect(last, progress(stderr)).toMatch(/^RESULT \{/);
    const result = JSON.parse(last.slice("RESULT ".length)) as Record<string, number>;
    expect(code, progress(stderr)).toBe(0);
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
