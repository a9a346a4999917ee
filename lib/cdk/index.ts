/**
 * reliable-consumers/cdk: the constructs (consumer functions and their triggers, queues with DLQs,
 * the dedup and outbox tables, Kafka topics, monitoring), the synth rules as pure functions, the
 * environment-variable names the handlers read, and the retry-ladder helpers. See docs/cdk.md.
 */

export * from "../env.ts";
export * from "./consumerFunction.ts";
export * from "./consumerMonitoring.ts";
export * from "./createdMskCluster.ts";
export * from "./dedupTable.ts";
export { BUNDLING, FUNCTION_ARCHITECTURE, FUNCTION_RUNTIME } from "./functionDefaults.ts";
export * from "./kafkaTopics.ts";
export * from "./mskCluster.ts";
export type { MskSchemaRegistry, SchemaRegistryAccess } from "./mskSchemaRegistry.ts";
export * from "./outboxTable.ts";
export { grantPowertoolsTableRead } from "./powertoolsCutover.ts";
export * from "./prebuiltFunction.ts";
export {
  PREBUILT_HANDLER,
  PREBUILT_HANDLERS,
  type PrebuiltHandlerName,
  prebuiltHandlerCode,
} from "./prebuiltHandlers.ts";
export * from "./queueWithDlq.ts";
export * from "./retryLadder.ts";
// Not `export *`: the unit helpers (isKnown, formatSeconds) are the constructs' own.
export {
  type ConsumerRuleCode,
  ConsumerRuleError,
  checkDedupWindow,
  checkKafkaMapping,
  checkMskTrigger,
  checkQueueName,
  checkQueueWithDlq,
  checkRelayParallelization,
  checkSqsTrigger,
  checkVisibilityTimeout,
  dedupWindowValidation,
  defaultKafkaRetryAttempts,
  KAFKA_RETRY_BUDGET,
  type KafkaLadderStage,
  type KafkaMappingCheck,
  kafkaRetryPathSeconds,
  kafkaWaitHandBacks,
  MAX_RECEIVE_COUNT,
  MAX_VISIBILITY_TIMEOUT_SECONDS,
  MIN_FIFO_RECEIVE_COUNT,
  MSK_TRIGGER_LIMITS,
  type MskTriggerCheck,
  type ProvisionedPollers,
  type QueueCheck,
  type RetryPath,
  requiredVisibilityTimeoutSeconds,
  SQS_RETENTION_SECONDS,
  SQS_TRIGGER_LIMITS,
  type SqsRetryPathInput,
  type SqsTriggerCheck,
  sqsRetryPathSeconds,
  VISIBILITY_TIMEOUT_FACTOR,
  type VisibilityCheck,
} from "./rules.ts";
