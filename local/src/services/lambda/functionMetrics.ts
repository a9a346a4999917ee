/**
 * A function's figures over time, from its log stream alone (as CloudWatch derives them from
 * Lambda's logs): invocations and durations from REPORT lines, errors from the platform's error
 * lines, and the batch outcomes from the library's EMF metrics. Fixed buckets, the last `keep`
 * of them. Pure (the clock is passed in).
 */
import type { FunctionSeriesDto, Outcome } from "../../console/consoleApi.ts";
import { OUTCOMES } from "../../console/consoleApi.ts";
import type { ParsedLogLine } from "./logLine.ts";

/** Which EMF metrics (lib/observability/telemetry.ts `METRIC`) count as which outcome. */
export const OUTCOME_METRICS: Readonly<Record<Outcome, readonly string[]>> = {
  succeeded: ["Processed", "OutboxPublished"],
  duplicate: ["DuplicatesSuppressed", "InBatchDuplicates"],
  failed: ["TransientFailures", "RoutedToRetry", "ParkingFailed", "OutboxPublishFailures"],
  parked: ["PermanentFailuresParked", "DeadLettered", "OutboxParked"],
  requeued: ["RequeuedHealthy"],
  heldElsewhere: ["InProgressElsewhere"],
};

interface Bucket {
  readonly start: number;
  invocations: number;
  errors: number;
  readonly durations: number[];
  readonly outcomes: Record<Outcome, number>;
}

const zeroOutcomes = (): Record<Outcome, number> =>
  Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;

/** The q-quantile (0..1) of `values`, nearest rank; null for none. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return Math.round(sorted[rank]! * 100) / 100;
}

/** One function's series; `add` each parsed line of its log as it arrives. */
export class FunctionMetrics {
  readonly #buckets: Bucket[] = [];
  readonly #bucketMs: number;
  readonly #keep: number;
  // All-time totals (the summary), the buckets only hold the charted window.
  readonly #totals = { invocations: 0, errors: 0, outcomes: zeroOutcomes() };
  readonly #durations: number[] = [];

  readonly name: string;

  constructor(name: string, options: { bucketMs?: number; keep?: number } = {}) {
    this.name = name;
    this.#bucketMs = options.bucketMs ?? 5_000;
    this.#keep = options.keep ?? 120;
  }

  add(line: ParsedLogLine, now: number): boolean {
    const counted = line.report !== undefined || line.invocationError === true || line.metrics !== undefined;
    if (!counted) return false;
    const b = this.#bucket(now);
    if (line.report || line.timedOut) {
      b.invocations++;
      this.#totals.invocations++;
    }
    if (line.report) {
      b.durations.push(line.report.durationMs);
      this.#durations.push(line.report.durationMs);
      if (this.#durations.length > 5_000) this.#durations.splice(0, this.#durations.length - 5_000);
    }
    if (line.invocationError) {
      b.errors++;
      this.#totals.errors++;
    }
    for (const outcome of OUTCOMES)
      for (const metric of OUTCOME_METRICS[outcome]) {
        const v = line.metrics?.[metric] ?? 0;
        b.outcomes[outcome] += v;
        this.#totals.outcomes[outcome] += v;
      }
    return true;
  }

  #bucket(now: number): Bucket {
    const start = now - (now % this.#bucketMs);
    const last = this.#buckets[this.#buckets.length - 1];
    if (last && last.start === start) return last;
    const b: Bucket = { start, invocations: 0, errors: 0, durations: [], outcomes: zeroOutcomes() };
    this.#buckets.push(b);
    if (this.#buckets.length > this.#keep) this.#buckets.shift();
    return b;
  }

  totals() {
    return {
      invocations: this.#totals.invocations,
      errors: this.#totals.errors,
      p50Ms: quantile(this.#durations, 0.5),
      p99Ms: quantile(this.#durations, 0.99),
      outcomes: { ...this.#totals.outcomes },
    };
  }

  /** The buckets from the first one that has data to `now`, empty ones filled in (a chart's x axis). */
  series(now: number): FunctionSeriesDto {
    const end = now - (now % this.#bucketMs);
    const first = this.#buckets[0]?.start ?? end;
    const from = Math.max(first, end - (this.#keep - 1) * this.#bucketMs);
    const byStart = new Map(this.#buckets.map((b) => [b.start, b]));
    const at: number[] = [];
    for (let t = from; t <= end; t += this.#bucketMs) at.push(t);
    const pick = <T>(f: (b: Bucket | undefined) => T) => at.map((t) => f(byStart.get(t)));
    return {
      name: this.name,
      bucketMs: this.#bucketMs,
      at,
      invocations: pick((b) => b?.invocations ?? 0),
      errors: pick((b) => b?.errors ?? 0),
      p50Ms: pick((b) => quantile(b?.durations ?? [], 0.5)),
      p99Ms: pick((b) => quantile(b?.durations ?? [], 0.99)),
      outcomes: Object.fromEntries(
        OUTCOMES.map((o) => [o, pick((b) => b?.outcomes[o] ?? 0)]),
      ) as unknown as Record<Outcome, number[]>,
    };
  }
}
