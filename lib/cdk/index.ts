/**
 * reliable-consumers/cdk: the constructs (consumer functions and the triggers bound to them, queues
 * with DLQs, the dedup and outbox tables, Kafka topics, monitoring), the error their rules throw at
 * synth, and the environment-variable names the handlers read. See docs/cdk.md.
 *
 * The rules themselves (lib/cdk/rules/) are the constructs' own: a user meets them as a
 * `ConsumerRuleError` with a stable `code`, or as a warning annotation.
 */

export { LAMBDA_ENV, OUTBOX_ENV } from "../env.ts";
export { ConsumerBundlingError, ConsumerFunction, type ConsumerFunctionProps } from "./consumerFunction.ts";
export {
  ConsumerFunctionBase,
  type ConsumerOptions,
  type DedupWindowOwner,
  type IConsumerTrigger,
  type TriggerRetryPath,
} from "./consumerFunctionBase.ts";
export {
  ConsumerMonitoring,
  type ConsumerMonitoringProps,
  type QueueAlarmOptions,
} from "./consumerMonitoring.ts";
export { CreatedMskCluster, type CreatedMskClusterProps } from "./createdMskCluster.ts";
export {
  DedupTable,
  DedupTableBase,
  type DedupTableProps,
  type ImportedDedupTableOptions,
} from "./dedupTable.ts";
export {
  DYNAMODB_STREAM_MAPPING_ACTIONS,
  DynamoDbStreamTrigger,
  type DynamoDbStreamTriggerOptions,
} from "./dynamoDbStreamTrigger.ts";
export { BUNDLING, FUNCTION_ARCHITECTURE, FUNCTION_RUNTIME } from "./functionDefaults.ts";
export { KafkaTopics, type KafkaTopicsProps } from "./kafkaTopics.ts";
export {
  KinesisStream,
  type KinesisStreamConsumerOptions,
  type KinesisStreamProps,
} from "./kinesisStream.ts";
export {
  KINESIS_FAN_OUT_ACTIONS,
  KINESIS_MAPPING_ACTIONS,
  KinesisTrigger,
  type KinesisTriggerOptions,
  type KinesisTriggerStream,
} from "./kinesisTrigger.ts";
export { type MskClusterKind, type MskClusterRef, MskGrants } from "./mskCluster.ts";
export type { MskSchemaRegistry, SchemaRegistryAccess } from "./mskSchemaRegistry.ts";
export { type KafkaProvisionedPollers, MskTrigger, type MskTriggerOptions } from "./mskTrigger.ts";
export {
  OutboxTable,
  type OutboxTableProps,
  type PrebuiltOptions,
  type RelayOptions,
  type SweeperOptions,
} from "./outboxTable.ts";
export { grantPowertoolsTableRead } from "./powertoolsCutover.ts";
export { QueueWithDlq, type QueueWithDlqProps } from "./queueWithDlq.ts";
export { type KafkaTopicSpec, ladderTopics, type RetryLadderDeclaration } from "./retryLadder.ts";
export { type ConsumerRuleCode, ConsumerRuleError } from "./rules/ruleError.ts";
export { SqsTrigger, type SqsTriggerOptions, type SqsTriggerQueue } from "./sqsTrigger.ts";
export { StreamTriggerBase, type StreamTriggerOptions, type StreamTriggerSource } from "./streamTrigger.ts";
