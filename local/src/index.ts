/**
 * reliable-consumers-local: the embedded emulators and the local runtime, for developers' machines
 * and tests; never imported by a Lambda bundle.
 *
 * - Emulators, all on 127.0.0.1: DynamoDB Local with Streams, fauxqs for SQS, Apache Kafka (a
 *   real broker or cluster) or librdkafka's mock, LocalStack's runtime when its venv is installed.
 *   Needs Java 17+ (and kcat for the mock).
 * - The local runtime: a synthesized CDK app's queues, tables, topics, functions and event source
 *   mappings on those emulators (or ones the user runs), with Lambda's trigger semantics and each
 *   function's IAM policies enforced.
 * - Triggers for a handler under test: one SQS poll-and-invoke, a Kafka mapping, a DynamoDB Streams
 *   mapping, each with the semantics of Lambda's own.
 *
 *   const emulators = await startEmulators(); // sets AWS_ENDPOINT_URL_* and KAFKA_BROKERS
 *   ...
 *   await emulators.stop();
 */
export { MissingPrerequisiteError } from "./childProcess.ts";
export {
  type EmulatorOptions,
  type Emulators,
  emulatorEnv,
  type KafkaSubstrate,
  kafkaSubstrateFromArgs,
  LOCAL_REGION,
  type ServiceEndpoint,
  startEmulators,
  startLocalKafka,
} from "./emulators.ts";
export type { Denial, DenialLog } from "./enforcement/denials.ts";
export type { LocalEnforcement } from "./enforcement/localEnforcement.ts";
export { type LocalStack, type LocalStackOptions, startLocalStack } from "./localstack.ts";
export { type CfnTemplate, loadCloudAssembly, type StackArtifact } from "./runtime/cloudAssembly.ts";
export {
  formatReport,
  type LocalRuntime,
  type LocalRuntimeOptions,
  type RuntimeClient,
  startLocalRuntime,
} from "./runtime/localRuntime.ts";
export type {
  KafkaMapping,
  LocalApp,
  LocalEventSourceMapping,
  LocalFunction,
  LocalQueue,
  MaterialisationReport,
  SqsMapping,
} from "./runtime/model.ts";
export { type SynthOptions, synthesize } from "./runtime/synth.ts";
export { appTableInput, createAppTable } from "./services/dynamodb/appTable.ts";
export { createDedupTable, dedupTableInput, deleteTable } from "./services/dynamodb/dedupTable.ts";
export {
  type DynamoDbLocal,
  type DynamoDbLocalOptions,
  startDynamoDbLocal,
} from "./services/dynamodb/emulator.ts";
export {
  createStreamPoller,
  type StreamPoller,
  type StreamPollerOptions,
} from "./services/dynamodb/streamPoller.ts";
export { toLambdaImage, toStreamRecord } from "./services/dynamodb/streamRecord.ts";
export { type KafkaCluster, type KafkaClusterOptions, startKafkaCluster } from "./services/kafka/cluster.ts";
export { type KafkaMock, type KafkaMockOptions, startKafkaMock } from "./services/kafka/mock.ts";
export { type ConsumedRecord, toMskEvent } from "./services/kafka/mskEventBuilder.ts";
export {
  type CreatedTopic,
  createDeclaredTopics,
  createDeclaredTopicsOn,
  type TopicDeclaration,
  TopicDeclarationMismatchError,
} from "./services/kafka/topics.ts";
export {
  type LocalKafkaTrigger,
  type LocalKafkaTriggerOptions,
  startLocalKafkaTrigger,
} from "./services/kafka/trigger.ts";
export { matchesAnyFilter } from "./services/lambda/eventFilter.ts";
export { lambdaContext } from "./services/lambda/lambdaContext.ts";
export { type SqsLocal, startSqsLocal } from "./services/sqs/emulator.ts";
export type { EventSource, EventSourceStats } from "./services/sqs/eventSource.ts";
export { type QueueDepth, queueDepth } from "./services/sqs/queueDepth.ts";
export {
  type InvocationResult,
  invokeFromQueue,
  type SqsLambdaHandler,
  type SqsTriggerOptions,
  toSqsRecord,
} from "./services/sqs/trigger.ts";
export { resolveUpstreams, type Upstream, UpstreamError, type Upstreams } from "./upstreams.ts";
