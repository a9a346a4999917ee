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
 *
 * Only what a user calls, configures or names in their own code is exported here (24 names; the
 * `./cli` entry point adds `runCli`), pinned by api/reliable-consumers-local.api.md. The rest is
 * the runtime's own: this repository's tests, benchmarks and chaos lab import it by path.
 */
export { MissingPrerequisiteError } from "./childProcess.ts";
export {
  type EmulatorOptions,
  type Emulators,
  type KafkaSubstrate,
  LOCAL_REGION,
  type ServiceEndpoint,
  startEmulators,
} from "./emulators.ts";
export type { Denial, DenialLog } from "./enforcement/denials.ts";
export { type LocalStack, type LocalStackOptions, startLocalStack } from "./localstack.ts";
export {
  formatReport,
  type LocalRuntime,
  type LocalRuntimeOptions,
  type RuntimeClient,
  startLocalRuntime,
} from "./runtime/localRuntime.ts";
export type { MaterialisationReport } from "./runtime/model.ts";
export { type SynthOptions, synthesize } from "./runtime/synth.ts";
export { createStreamPoller } from "./services/dynamodb/streamPoller.ts";
export { startLocalKafkaTrigger } from "./services/kafka/trigger.ts";
export { type InvocationResult, invokeFromQueue } from "./services/sqs/trigger.ts";
