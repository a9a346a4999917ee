/**
 * The environment variables the library and the reference functions read. The CDK constructs set
 * them; the code reads them. One list, so a rename breaks the typecheck instead of a deployment. It
 * sits outside lib/cdk so that a handler reads the names without importing any construct code.
 */
import { OUTBOX_ENV } from "./outbox/schema.ts";

export const LAMBDA_ENV = {
  dedupTableName: "DEDUP_TABLE_NAME",
  /** How long a dedup key is remembered (seconds): the TTL the dedup store writes. */
  dedupWindowSeconds: "DEDUP_WINDOW_SECONDS",
  /**
   * The consumer's name (`ConsumerFunction`'s `consumerName`): its default dedup scope and the
   * `x-consumer` of what it parks. Stable across deploys, unlike the generated function name.
   */
  consumerName: "CONSUMER_NAME",
  appTableName: OUTBOX_ENV.tableName,
  ordersQueueUrl: "ORDERS_QUEUE_URL",
  ordersDlqUrl: "ORDERS_DLQ_URL",
  reportQueueUrl: "REPORT_QUEUE_URL",
  /** The DLQ of the queue that triggers the function: permanent errors are parked there at once. */
  dlqUrl: "DLQ_URL",
  kafkaBrokers: "KAFKA_BROKERS",
  kafkaTopic: "KAFKA_TOPIC",
  /** JSON of the retry ladder (see `retryLadder.ts`): the same declaration that created the topics. */
  kafkaRetryLadder: "KAFKA_RETRY_LADDER",
  /** `"true"` when the cluster uses SASL/IAM. */
  mskIamAuth: "MSK_IAM_AUTH",
  powertoolsServiceName: "POWERTOOLS_SERVICE_NAME",
  powertoolsMetricsNamespace: "POWERTOOLS_METRICS_NAMESPACE",
  /** Outbox relay and sweeper: parking queue, routes, sweeper tuning (names owned by lib/outbox/schema.ts). */
  outboxParkingQueueUrl: OUTBOX_ENV.parkingQueueUrl,
  outboxRoutes: OUTBOX_ENV.routes,
  outboxSweeperMinAgeMs: OUTBOX_ENV.sweeperMinAgeMs,
  outboxSweeperMaxEvents: OUTBOX_ENV.sweeperMaxEvents,
  outboxPendingShards: OUTBOX_ENV.pendingShards,
} as const;

export type LambdaEnvName = (typeof LAMBDA_ENV)[keyof typeof LAMBDA_ENV];
