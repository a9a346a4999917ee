import type { Context, ScheduledEvent } from "aws-lambda";
import { OUTBOX_ENV } from "../env.ts";
import { createTelemetry } from "../observability/telemetry.ts";
import { OUTBOX_DEFAULTS } from "../outbox/schema.ts";
import { createOutboxSweeper, type SweepReport } from "../outbox/sweeper.ts";

/**
 * The outbox sweeper, on a schedule (EventBridge rule, every minute). Republishes outbox events
 * still pending after OUTBOX_SWEEPER_MIN_AGE_MS (@default 10 min), at most OUTBOX_SWEEPER_MAX_EVENTS
 * (@default 1000) a run, and emits OutboxPendingCount and OutboxOldestPendingAge.
 *
 * Environment: APP_TABLE_NAME, KAFKA_BROKERS (+ MSK_IAM_AUTH), OUTBOX_ROUTES, OUTBOX_PARKING_QUEUE_URL,
 * OUTBOX_PENDING_SHARDS (must match the writers; @default 8).
 */
const telemetry = createTelemetry({ serviceName: "outbox-sweeper" });
const num = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};

const tableName = process.env[OUTBOX_ENV.tableName];
const routes = process.env[OUTBOX_ENV.routes]
  ? (JSON.parse(process.env[OUTBOX_ENV.routes]!) as Record<string, string>)
  : {};

export const sweeper = createOutboxSweeper({
  tableName: tableName ?? "app",
  minAgeMs: num(OUTBOX_ENV.sweeperMinAgeMs, OUTBOX_DEFAULTS.sweeperMinAgeMs),
  maxEvents: num(OUTBOX_ENV.sweeperMaxEvents, 1000),
  pendingShards: num(OUTBOX_ENV.pendingShards, OUTBOX_DEFAULTS.pendingShards),
  publisherOptions: { routes },
  telemetry,
});

export async function handler(_event: ScheduledEvent | undefined, context?: Context): Promise<SweepReport> {
  if (!tableName) throw new Error(`${OUTBOX_ENV.tableName} is not set`);
  // Leave 10 s to settle the last batch and publish metrics.
  const deadline = context ? Date.now() + context.getRemainingTimeInMillis() - 10_000 : undefined;
  try {
    const report = await sweeper.sweep(deadline !== undefined ? { deadline } : {});
    telemetry.logger.info("outbox sweep", { ...report });
    return report;
  } finally {
    telemetry.metrics.publishStoredMetrics();
  }
}
