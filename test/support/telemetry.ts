import { createTelemetry, type Telemetry } from "reliable-consumers";

/** Real Powertools telemetry that also tallies every count, so tests can assert on metrics. */
export function recordingTelemetry(): Telemetry & { counts: Record<string, number> } {
  const inner = createTelemetry({ serviceName: "test" });
  const counts: Record<string, number> = {};
  return {
    ...inner,
    counts,
    count(name, value = 1) {
      counts[name] = (counts[name] ?? 0) + value;
      inner.count(name, value);
    },
  };
}
