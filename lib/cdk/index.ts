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
export * from "./prebuiltFunction.ts";
export * from "./prebuiltHandlers.ts";
export * from "./queueWithDlq.ts";
export * from "./retryLadder.ts";
export * from "./rules.ts";
