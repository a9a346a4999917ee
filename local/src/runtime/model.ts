/** What the materialiser made of a template: the local resources, with the names the code sees. */
import type { AccessModel } from "../services/iam/accessModel.ts";

export interface LocalQueue {
  /** The template's logical id; for a stand-in, the ARN it stands in for (`importedArn`). */
  readonly logicalId: string;
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  readonly fifo: boolean;
  readonly visibilityTimeoutSeconds: number;
  readonly deadLetterQueueArn?: string;
  readonly maxReceiveCount?: number;
  /**
   * Set on a local stand-in for a queue the template uses but does not create
   * (`sqs.Queue.fromQueueArn`): the ARN the template names. Its settings are the emulator's defaults.
   */
  readonly importedArn?: string;
}

export interface LocalTable {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  readonly streamArn?: string;
  readonly streamViewType?: string;
  readonly ttlAttribute?: string;
}

/** A Kinesis data stream on kinesis-local (`AWS::Kinesis::Stream`, or a stand-in for an imported one). */
export interface LocalStream {
  /** The template's logical id; for a stand-in, the ARN it stands in for (`importedArn`). */
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  /** Open shards at creation (on-demand streams start with 4, as on AWS). */
  readonly shardCount: number;
  readonly mode: "PROVISIONED" | "ON_DEMAND";
  /** @default 24 */
  readonly retentionHours: number;
  /** Set on a local stand-in for a stream the template uses but does not create (`Stream.fromStreamArn`). */
  readonly importedArn?: string;
}

/** An enhanced fan-out consumer of a stream (`AWS::Kinesis::StreamConsumer`). */
export interface LocalStreamConsumer {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  readonly streamArn: string;
}

export interface LocalTopic {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  /** As declared in the template. */
  readonly partitions?: number;
  /** As the local cluster has it. */
  readonly actualPartitions: number;
}

export interface LocalFunction {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  /** `aws:cdk:path` metadata, e.g. `Stack/order-consumer/Function/Resource`. */
  readonly cdkPath?: string;
  /** Module file of the bundled code and the export to call. */
  readonly codeFile: string;
  readonly exportName: string;
  readonly handler: string;
  readonly runtime: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** The template's variables, resolved to local names and URLs, after the local rewrites. */
  readonly environment: Record<string, string>;
  readonly reservedConcurrency?: number;
}

export type OnFailureDestination =
  | { readonly kind: "sqs"; readonly queue: LocalQueue }
  | { readonly kind: "kafka"; readonly topic: string };

export interface EventSourceMappingBase {
  readonly logicalId: string;
  readonly uuid: string;
  readonly functionName: string;
  readonly batchSize: number;
  readonly maxBatchingWindowSeconds: number;
  readonly reportBatchItemFailures: boolean;
  /** Parsed FilterCriteria patterns (a record passes if any matches). */
  readonly filters: readonly unknown[];
}

export interface SqsMapping extends EventSourceMappingBase {
  readonly kind: "sqs";
  readonly queue: LocalQueue;
  readonly maxConcurrency?: number;
}

export interface StreamMappingOptions {
  readonly bisectBatchOnFunctionError: boolean;
  /** -1 = until the record expires. */
  readonly maximumRetryAttempts: number;
  /** -1 = no limit. */
  readonly maximumRecordAgeSeconds: number;
  /** AT_TIMESTAMP: Kinesis only (`startingPositionTimestamp`). */
  readonly startingPosition: "TRIM_HORIZON" | "LATEST" | "AT_TIMESTAMP";
  /** AT_TIMESTAMP's instant, epoch seconds. */
  readonly startingPositionTimestamp?: number;
  readonly onFailure?: OnFailureDestination;
}

export interface DynamoDbMapping extends EventSourceMappingBase, StreamMappingOptions {
  readonly kind: "dynamodb";
  readonly table: LocalTable;
  readonly streamArn: string;
  readonly parallelizationFactor: number;
}

/** A Kinesis data stream (or an enhanced fan-out consumer of one) → the local shard reader. */
export interface KinesisMapping extends EventSourceMappingBase, StreamMappingOptions {
  readonly kind: "kinesis";
  readonly stream: LocalStream;
  readonly streamArn: string;
  /** Set when `EventSourceArn` names a stream consumer (enhanced fan-out). */
  readonly consumerArn?: string;
  /** Concurrent batches per shard, records of one partition key in order (1–10). */
  readonly parallelizationFactor: number;
}

/** A Kafka mapping's `SchemaRegistryConfig` (kafkaSchemaRegistry.ts). */
export interface KafkaMappingSchemaRegistry {
  /** `SchemaRegistryURI`: a Glue registry ARN or a Confluent registry URL. */
  readonly uri: string;
  readonly eventRecordFormat: "JSON" | "SOURCE";
  /** `SchemaValidationConfigs`: the parts the registry validates and hands over decoded. */
  readonly attributes: ReadonlyArray<"KEY" | "VALUE">;
  /** `AccessConfigs`: `{ type: "BASIC_AUTH", uri: <secret ARN> }` and the like. */
  readonly accessConfigs: ReadonlyArray<{ readonly type: string; readonly uri: string }>;
}

export interface KafkaMapping extends EventSourceMappingBase, StreamMappingOptions {
  readonly kind: "kafka";
  readonly clusterArn: string;
  readonly topics: readonly string[];
  readonly consumerGroupId: string;
  readonly maximumPollers?: number;
  /** The mapping's schema registry, when it has one. */
  readonly schemaRegistry?: KafkaMappingSchemaRegistry;
}

export type LocalEventSourceMapping = SqsMapping | DynamoDbMapping | KafkaMapping | KinesisMapping;

export interface LocalSchedule {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  readonly expression: string;
  readonly everyMs: number;
  readonly targets: ReadonlyArray<{ readonly functionName: string; readonly input?: unknown }>;
  readonly retryAttempts: number;
}

export interface ReportEntry {
  readonly logicalId: string;
  readonly type: string;
  readonly detail: string;
}

/** What the local runtime made of each resource, and what it left out. */
export interface MaterialisationReport {
  /** Made real on the emulators (or, for functions and mappings, in the local host). */
  readonly created: ReportEntry[];
  /** Present in the template, with no local effect: IAM, alarms, log groups... and why. */
  readonly inert: ReportEntry[];
  /** Not emulated: the template relies on something the local runtime does not do. */
  readonly unsupported: ReportEntry[];
  /**
   * Refused as AWS refuses it (an event source mapping whose function's role lacks what the
   * mapping needs: `enforcement/mappingRole.ts`), with AWS's error.
   */
  readonly refused: ReportEntry[];
  /**
   * Local stand-ins for resources the template uses but does not create (an imported queue): the
   * imported ARN (as `logicalId`), and what stands in for it. Their settings are the emulator's
   * defaults, not the real resource's, which the template does not hold.
   */
  readonly standIns: ReportEntry[];
  /** Fidelity notes: rewritten values, ignored properties, partition counts. */
  readonly notes: string[];
}

/** A CDK app as the local runtime materialised it: queues, tables, topics, functions, mappings. */
export interface LocalApp {
  readonly stackName: string;
  readonly region: string;
  readonly accountId: string;
  readonly queues: LocalQueue[];
  readonly tables: LocalTable[];
  readonly topics: LocalTopic[];
  /** Kinesis data streams, and their enhanced fan-out consumers. */
  readonly streams: LocalStream[];
  readonly streamConsumers: LocalStreamConsumer[];
  readonly functions: LocalFunction[];
  readonly mappings: LocalEventSourceMapping[];
  readonly schedules: LocalSchedule[];
  readonly kafkaBrokers: readonly string[];
  readonly report: MaterialisationReport;
  /** Each function's role and policies and the resource policies, for the enforcing gateways. */
  readonly access: AccessModel;
}
