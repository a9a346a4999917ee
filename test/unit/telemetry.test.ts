import { afterEach, describe, expect, it, vi } from "vitest";
import { createEmfMetrics } from "../../lib/observability/emfMetrics.ts";
import { createJsonLogger } from "../../lib/observability/jsonLogger.ts";

// The built-in logger and EMF writer that replace Powertools' as defaults (bundle size): the
// shapes CloudWatch and log queries rely on.
function captureStdout(): () => string[] {
  const lines: string[] = [];
  vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    lines.push(...String(chunk).split("\n").filter(Boolean));
    return true;
  });
  return () => lines;
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe("EMF metrics", () => {
  it("publishes one EMF document with the service dimension, same-name values as an array", () => {
    vi.stubEnv("POWERTOOLS_METRICS_DISABLED", "false");
    const lines = captureStdout();
    const m = createEmfMetrics({ namespace: "NS", serviceName: "orders" });
    m.addMetric("Processed", "Count", 1);
    m.addMetric("Processed", "Count", 2);
    m.addMetric("BatchDuration", "Milliseconds", 40);
    m.publishStoredMetrics();
    m.publishStoredMetrics(); // nothing stored: nothing written
    expect(lines()).toHaveLength(1);
    const doc = JSON.parse(lines()[0]!);
    expect(doc._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: "NS",
        Dimensions: [["service"]],
        Metrics: [
          { Name: "Processed", Unit: "Count" },
          { Name: "BatchDuration", Unit: "Milliseconds" },
        ],
      },
    ]);
    expect(doc).toMatchObject({ service: "orders", Processed: [1, 2], BatchDuration: 40 });
    expect(typeof doc._aws.Timestamp).toBe("number");
  });

  it("flushes at CloudWatch's 100 metrics per document, and writes nothing when disabled", () => {
    vi.stubEnv("POWERTOOLS_METRICS_DISABLED", "false");
    const lines = captureStdout();
    const m = createEmfMetrics({ namespace: "NS", serviceName: "s" });
    for (let i = 0; i < 101; i++) m.addMetric(`M${i}`, "Count", 1);
    m.publishStoredMetrics();
    expect(lines().map((l) => JSON.parse(l)._aws.CloudWatchMetrics[0].Metrics.length)).toEqual([100, 1]);
    vi.stubEnv("POWERTOOLS_METRICS_DISABLED", "true");
    const off = createEmfMetrics({ namespace: "NS", serviceName: "s" });
    off.addMetric("X", "Count", 1);
    off.publishStoredMetrics();
    expect(lines()).toHaveLength(2);
  });
});

describe("JSON logger", () => {
  it("writes Powertools-shaped lines, errors with name, message and stack, under the level threshold", () => {
    vi.stubEnv("POWERTOOLS_LOG_LEVEL", "WARN");
    const lines = captureStdout();
    const log = createJsonLogger("orders");
    log.info("not shown");
    log.warn("record failed", { messageId: "m-1", error: new TypeError("bad") });
    expect(lines()).toHaveLength(1);
    const entry = JSON.parse(lines()[0]!);
    expect(entry).toMatchObject({
      level: "WARN",
      message: "record failed",
      service: "orders",
      messageId: "m-1",
    });
    expect(entry.error).toMatchObject({ name: "TypeError", message: "bad" });
    expect(entry.error.stack).toContain("TypeError: bad");
  });
});
