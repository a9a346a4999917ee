import { createEmfMetrics, type TelemetryMetrics } from "./emfMetrics.ts";
import { createJsonLogger, type TelemetryLogger } from "./jsonLogger.ts";

export type { TelemetryMetrics, TelemetryMetricUnit } from "./emfMetrics.ts";
export type { TelemetryLogger } from "./jsonLogger.ts";

/**
 * A logger and EMF metrics, shared by every consumer: small built-in ones by default (JSON logs
 * and EMF lines in Powertools' shapes), or Powertools `Logger` and `Metrics` instances, which fit
 * the same interfaces. Logs never carry message payloads unless `logPayloads` is set; metric
 * names are listed once in `METRIC`.
 */
export interface Telemetry {
  /** The logger every consumer writes to. */
  readonly logger: TelemetryLogger;
  /** The EMF metrics every consumer writes to. */
  readonly metrics: TelemetryMetrics;
  /** Opt-in payload logging. @default false */
  readonly logPayloads: boolean;
  /**
   * Adds `value` to a metric of `METRIC`: in milliseconds for `BatchDuration` and `OutboxOldestPendingAge`, a
   * count for every other.
   * @default value 1
   */
  count(name: MetricName, value?: number): void;
}

/** The metric names the library emits (EMF), one place. */
export const METRIC = {
  processed: "Processed",
  duplicates: "DuplicatesSuppressed",
  inBatchDuplicates: "InBatchDuplicates",
  brokerIdFallback: "DedupKeyFromBrokerId",
  transientFailures: "TransientFailures",
  permanentFailures: "PermanentFailuresParked",
  parkFailures: "ParkingFailed",
  leasesLost: "LeasesLost",
  inProgressElsewhere: "InProgressElsewhere",
  heartbeatExtensions: "HeartbeatExtensions",
  heartbeatErrors: "HeartbeatErrors",
  outOfTime: "NotStartedOutOfTime",
  /**
   * Records still running at the cut-off (their handler did not stop at its signal): handed back
   * unfinished, their effect possibly still under way.
   */
  abandonedAtCutOff: "AbandonedAtCutOff",
  /** Settlement stages cut at the settlement deadline, so that the batch answers in time. */
  settlementCut: "SettlementCutAtDeadline",
  /** Healthy SQS records sent again as fresh copies on their last receive, instead of being dead-lettered unrun. */
  requeued: "RequeuedHealthy",
  batchDurationMs: "BatchDuration",
  retried: "RoutedToRetry",
  deadLettered: "DeadLettered",
  published: "OutboxPublished",
  outboxPending: "OutboxPendingCount",
  outboxOldestAgeMs: "OutboxOldestPendingAge",
  /** Unit-of-work transactions committed (inbox marker + business writes + outbox events). */
  unitOfWorkCommitted: "UnitOfWorkCommitted",
  /** Unit-of-work transactions cancelled by a concurrent transaction or throttling (retried). */
  unitOfWorkConflicts: "UnitOfWorkConflicts",
  /** Outbox events parked (malformed, unknown destination, rejected by the broker). */
  outboxParked: "OutboxParked",
  /** Stream records the relay ignored: not outbox INSERTs (check the event-source filter). */
  outboxRelaySkipped: "OutboxRelaySkipped",
  /** Outbox events whose publish failed and will be retried (by the stream or the sweeper). */
  outboxPublishFailures: "OutboxPublishFailures",
  /** Published events whose pending marker could not be cleared (the sweeper will republish them). */
  outboxMarkFailures: "OutboxMarkFailures",
  /** Events left pending because an older event of their aggregate was still pending or parked. */
  outboxDeferred: "OutboxDeferred",
  /** Events the sweeper republished. */
  outboxRepublished: "OutboxRepublished",
  /** Kafka retry-topic records left for redelivery because they were not yet due. */
  kafkaNotYetDue: "KafkaRetryNotYetDue",
  /** Kafka records routed along their key's earlier record onto the retry path (key order). */
  kafkaFollowedKey: "KafkaFollowedKeyToRetry",
  /**
   * Redelivered Kafka records recognised as already routed (to a retry topic or the DLQ) by their
   * dedup record: acked, neither run nor routed again.
   */
  routedRecognised: "RoutedRecognised",
  /** Records routed on whose route could not be recorded: a redelivery may route them again. */
  routeNotRecorded: "RouteNotRecorded",
  /** Kafka records reported in the partial batch response (redelivered from there). */
  kafkaReportedUnfinished: "KafkaReportedUnfinished",
  /**
   * Records held back because their schema registry could not answer (unreachable, 5xx, access
   * denied, a URL or registry name that does not exist): never dead-lettered for it, so alarmed.
   */
  schemaRegistryUnavailable: "SchemaRegistryUnavailable",
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** Options of `createTelemetry`. */
export interface TelemetryOptions {
  /**
   * The `service` of the built-in logger's lines and EMF metrics (their dimension).
   * @default POWERTOOLS_SERVICE_NAME or "reliable-consumer"
   */
  readonly serviceName?: string;
  /**
   * The CloudWatch namespace of the built-in EMF metrics.
   * @default POWERTOOLS_METRICS_NAMESPACE or "ReliableConsumers"
   */
  readonly namespace?: string;
  /** E.g. a Powertools `Logger`. @default a JSON logger (`createJsonLogger`) */
  readonly logger?: TelemetryLogger;
  /** E.g. a Powertools `Metrics`. @default an EMF writer (`createEmfMetrics`) */
  readonly metrics?: TelemetryMetrics;
  /** Let logs carry message payloads (today: the body of an SQS record parked in its DLQ). @default false */
  readonly logPayloads?: boolean;
}

/** Creates the logger and EMF metrics the consumers report through. */
export function createTelemetry(options: TelemetryOptions = {}): Telemetry {
  const serviceName = options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? "reliable-consumer";
  const logger = options.logger ?? createJsonLogger(serviceName);
  const metrics =
    options.metrics ??
    createEmfMetrics({
      serviceName,
      namespace: options.namespace ?? process.env.POWERTOOLS_METRICS_NAMESPACE ?? "ReliableConsumers",
    });
  return {
    logger,
    metrics,
    logPayloads: options.logPayloads ?? false,
    count(name, value = 1) {
      if (name === METRIC.batchDurationMs || name === METRIC.outboxOldestAgeMs) {
        metrics.addMetric(name, "Milliseconds", value);
      } else {
        metrics.addMetric(name, "Count", value);
      }
    },
  };
}
