/**
 * The environment variables the library and its prebuilt handlers read. The CDK constructs set
 * them; the code reads them. One list, so a rename breaks the typecheck instead of a deployment. It
 * sits outside lib/cdk so that a handler reads the names without importing any construct code.
 */

/** Environment variables the outbox functions read; the CDK stacks set them. */
export const OUTBOX_ENV = {
  /** The app table (inbox markers, business items, outbox events). */
  tableName: "APP_TABLE_NAME",
  /** Comma-separated bootstrap brokers; unset disables Kafka destinations. */
  kafkaBrokers: "KAFKA_BROKERS",
  /** JSON object: route name → `kafka:<topic>` | `sqs:<queue url>`. Optional. */
  routes: "OUTBOX_ROUTES",
  /** SQS queue where events that fail permanently are parked with their context. Optional. */
  parkingQueueUrl: "OUTBOX_PARKING_QUEUE_URL",
  /** Sweeper: republish events pending for longer than this many ms. */
  sweeperMinAgeMs: "OUTBOX_SWEEPER_MIN_AGE_MS",
  /** Sweeper: the most events republished in one run. */
  sweeperMaxEvents: "OUTBOX_SWEEPER_MAX_EVENTS",
  pendingShards: "OUTBOX_PENDING_SHARDS",
  /**
   * Relay and sweeper: `"false"` when the table holds no outbox events written without numbers
   * (it never had a writer with `aggregateSequence: false` or a version before numbering), so an
   * aggregate's first event has no predecessor to read. @default true: it reads one (a Query)
   */
  unnumberedEvents: "OUTBOX_UNNUMBERED_EVENTS",
} as const;

/** Environment variables the consumers read; `ConsumerFunction` sets them. */
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

/** The name of one of the environment variables in `LAMBDA_ENV`. */
export type LambdaEnvName = (typeof LAMBDA_ENV)[keyof typeof LAMBDA_ENV];
