/**
 * The default metrics: CloudWatch Embedded Metric Format, one JSON line per publish on stdout,
 * with the `service` dimension, as Powertools Metrics writes it (same-name values become an
 * array; at most 100 metrics per line, CloudWatch's limit). Honours
 * `POWERTOOLS_METRICS_DISABLED`. Small on purpose: it keeps Powertools Metrics (~12 kB minified)
 * out of every consumer's bundle; pass a Powertools `Metrics` as `telemetry.metrics` instead if
 * you use its other features.
 */
export type TelemetryMetricUnit = "Count" | "Milliseconds";

export interface TelemetryMetrics {
  addMetric(name: string, unit: TelemetryMetricUnit, value: number): void;
  publishStoredMetrics(): void;
}

/** CloudWatch takes at most 100 metric definitions per EMF document. */
const MAX_METRICS_PER_LINE = 100;

export function createEmfMetrics(options: { namespace: string; serviceName: string }): TelemetryMetrics {
  const disabled = (process.env.POWERTOOLS_METRICS_DISABLED ?? "").toLowerCase() === "true";
  // Container scope, like Powertools: every invocation's counts go out on its next publish.
  let stored = new Map<string, { unit: TelemetryMetricUnit; values: number[] }>();
  const publish = () => {
    if (stored.size === 0) return;
    const metrics = stored;
    stored = new Map();
    if (disabled) return;
    const line: Record<string, unknown> = {
      _aws: {
        Timestamp: Date.now(),
        CloudWatchMetrics: [
          {
            Namespace: options.namespace,
            Dimensions: [["service"]],
            Metrics: [...metrics].map(([Name, m]) => ({ Name, Unit: m.unit })),
          },
        ],
      },
      service: options.serviceName,
    };
    for (const [name, m] of metrics) line[name] = m.values.length === 1 ? m.values[0] : m.values;
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  return {
    addMetric(name, unit, value) {
      if (!stored.has(name) && stored.size >= MAX_METRICS_PER_LINE) publish();
      const m = stored.get(name) ?? { unit, values: [] };
      m.values.push(value);
      stored.set(name, m);
    },
    publishStoredMetrics: publish,
  };
}
