import { createHash } from "node:crypto";
import type { CfnResource } from "../../runtime/cloudAssembly.ts";
import { resolveString, resolveValue } from "../../runtime/intrinsics.ts";
import { findFunction, type MaterialiseState, num } from "../../runtime/materialiseState.ts";
import type {
  EventSourceMappingBase,
  KafkaMappingSchemaRegistry,
  LocalEventSourceMapping,
  OnFailureDestination,
  StreamMappingOptions,
} from "../../runtime/model.ts";

/** What every kind of mapping is built from: its properties, the common fields, the source ARN. */
interface MappingInput {
  readonly id: string;
  readonly p: Record<string, unknown>;
  /** The fields every kind shares; each kind adds its batch size and window defaults. */
  readonly base: Omit<EventSourceMappingBase, "batchSize" | "maxBatchingWindowSeconds">;
  readonly sourceArn: string | undefined;
  readonly s: MaterialiseState;
}

/** One kind of event source mapping: `undefined` when the source is not of this kind. */
type MappingMaterialiser = (
  input: MappingInput,
) => { mapping: LocalEventSourceMapping; detail: string } | undefined;

function onFailureOf({ id, p, s }: MappingInput): OnFailureDestination | undefined {
  const dest = (p.DestinationConfig as { OnFailure?: { Destination?: unknown } } | undefined)?.OnFailure
    ?.Destination;
  if (dest === undefined) return undefined;
  const arn = resolveString(dest, s.ctx, `${id}.DestinationConfig.OnFailure.Destination`);
  if (arn.startsWith("kafka://")) return { kind: "kafka", topic: arn.slice("kafka://".length) };
  const queue = s.queues.find((q) => q.arn === arn);
  if (queue) return { kind: "sqs", queue };
  throw new Error(`on-failure destination ${arn} is not emulated (SQS queues and kafka:// topics are)`);
}

/** Retry, bisect, record age, starting position and on-failure destination of a stream or Kafka mapping. */
function streamOptions(
  input: MappingInput,
  defaults: { retry: number; atTimestamp?: boolean },
): StreamMappingOptions {
  const { id, p, s } = input;
  const onFailure = onFailureOf(input);
  let retries = num(p.MaximumRetryAttempts, defaults.retry);
  if (retries === -1 && onFailure?.kind === "kafka") retries = 10; // documented: infinite + Kafka destination → 10
  const start = String(p.StartingPosition ?? "TRIM_HORIZON");
  const timestamp =
    start === "AT_TIMESTAMP" && defaults.atTimestamp
      ? Number(resolveValue(p.StartingPositionTimestamp, s.ctx, `${id}.StartingPositionTimestamp`))
      : undefined;
  if (start !== "TRIM_HORIZON" && start !== "LATEST" && timestamp === undefined)
    throw new Error(`StartingPosition ${start} is not emulated`);
  if (timestamp !== undefined && !Number.isFinite(timestamp))
    throw new Error(`${id}: AT_TIMESTAMP needs StartingPositionTimestamp (epoch seconds)`);
  return {
    bisectBatchOnFunctionError:
      p.BisectBatchOnFunctionError === true || p.BisectBatchOnFunctionError === "true",
    maximumRetryAttempts: retries,
    maximumRecordAgeSeconds: num(p.MaximumRecordAgeInSeconds, -1),
    startingPosition: start as StreamMappingOptions["startingPosition"],
    ...(timestamp !== undefined ? { startingPositionTimestamp: timestamp } : {}),
    ...(onFailure ? { onFailure } : {}),
  };
}

/** An SQS queue of the template → the local SQS poller. */
const sqsMapping: MappingMaterialiser = ({ p, base, sourceArn, s }) => {
  const queue = sourceArn ? s.queues.find((q) => q.arn === sourceArn) : undefined;
  if (!queue) return undefined;
  const max = (p.ScalingConfig as { MaximumConcurrency?: unknown } | undefined)?.MaximumConcurrency;
  return {
    mapping: {
      ...base,
      kind: "sqs",
      queue,
      batchSize: num(p.BatchSize, 10),
      maxBatchingWindowSeconds: num(p.MaximumBatchingWindowInSeconds, 0),
      ...(max !== undefined ? { maxConcurrency: Number(max) } : {}),
    },
    detail: `SQS ${queue.name} → ${base.functionName}`,
  };
};

/** A table's stream → the local shard poller. */
const dynamodbMapping: MappingMaterialiser = (input) => {
  const { id, p, base, sourceArn, s } = input;
  const table = sourceArn
    ? s.tables.find((t) => t.streamArn === sourceArn || sourceArn.startsWith(`${t.arn}/stream/`))
    : undefined;
  if (!table?.streamArn) return undefined;
  const pf = num(p.ParallelizationFactor, 1);
  if (pf > 1) s.note(`${id}: ParallelizationFactor ${pf} runs as 1 locally (one batch per shard at a time)`);
  if (p.TumblingWindowInSeconds) throw new Error("tumbling windows are not emulated");
  return {
    mapping: {
      ...base,
      ...streamOptions(input, { retry: -1 }),
      kind: "dynamodb",
      table,
      streamArn: table.streamArn,
      batchSize: num(p.BatchSize, 100),
      maxBatchingWindowSeconds: num(p.MaximumBatchingWindowInSeconds, 0),
      parallelizationFactor: pf,
    },
    detail: `DynamoDB stream ${table.name} → ${base.functionName}`,
  };
};

/**
 * A Kinesis stream, or an enhanced fan-out consumer of one → the local shard reader. Defaults as
 * "Lambda parameters for Amazon Kinesis Data Streams event source mappings": BatchSize 100 (at most
 * 10,000), no batching window, retries and record age unbounded, ParallelizationFactor 1 (at most 10).
 */
const kinesisMapping: MappingMaterialiser = (input) => {
  const { id, p, base, sourceArn, s } = input;
  if (!sourceArn) return undefined;
  const consumer = s.streamConsumers.find((c) => c.arn === sourceArn);
  const stream = s.streams.find((t) => t.arn === (consumer?.streamArn ?? sourceArn));
  if (!stream) return undefined;
  const pf = num(p.ParallelizationFactor, 1);
  if (!Number.isInteger(pf) || pf < 1 || pf > 10)
    throw new Error(`${id}: ParallelizationFactor ${pf} is outside 1–10`);
  if (p.TumblingWindowInSeconds) throw new Error("tumbling windows are not emulated");
  if (consumer)
    s.note(
      `${id}: enhanced fan-out (${consumer.name}) is read with GetRecords locally; SubscribeToShard's HTTP/2 push is not emulated`,
    );
  return {
    mapping: {
      ...base,
      ...streamOptions(input, { retry: -1, atTimestamp: true }),
      kind: "kinesis",
      stream,
      streamArn: stream.arn,
      ...(consumer ? { consumerArn: consumer.arn } : {}),
      batchSize: num(p.BatchSize, 100),
      maxBatchingWindowSeconds: num(p.MaximumBatchingWindowInSeconds, 0),
      parallelizationFactor: pf,
    },
    detail: `Kinesis ${stream.name}${consumer ? ` (consumer ${consumer.name})` : ""} → ${base.functionName}`,
  };
};

/**
 * The mapping's `SchemaRegistryConfig` (inside its Amazon MSK or self-managed Kafka config, where
 * CloudFormation has it): the local mapping deserializes through the registry as Lambda does
 * (kafkaSchemaRegistry.ts).
 */
function schemaRegistryOf(
  { id, s }: MappingInput,
  config: { SchemaRegistryConfig?: unknown } | undefined,
): KafkaMappingSchemaRegistry | undefined {
  const c = config?.SchemaRegistryConfig as
    | {
        SchemaRegistryURI?: unknown;
        EventRecordFormat?: unknown;
        SchemaValidationConfigs?: Array<{ Attribute?: unknown }>;
        AccessConfigs?: Array<{ Type?: unknown; URI?: unknown }>;
      }
    | undefined;
  if (!c) return undefined;
  const at = `${id}.SchemaRegistryConfig`;
  const format = resolveString(c.EventRecordFormat ?? "JSON", s.ctx, `${at}.EventRecordFormat`);
  if (format !== "JSON" && format !== "SOURCE")
    throw new Error(`${at}: EventRecordFormat ${format} is not JSON or SOURCE`);
  return {
    uri: resolveString(c.SchemaRegistryURI, s.ctx, `${at}.SchemaRegistryURI`),
    eventRecordFormat: format,
    attributes: (c.SchemaValidationConfigs ?? [])
      .map((v) => resolveString(v.Attribute, s.ctx, `${at}.SchemaValidationConfigs`))
      .filter((a): a is "KEY" | "VALUE" => a === "KEY" || a === "VALUE"),
    accessConfigs: (c.AccessConfigs ?? []).map((a) => ({
      type: resolveString(a.Type, s.ctx, `${at}.AccessConfigs`),
      uri: resolveString(a.URI, s.ctx, `${at}.AccessConfigs`),
    })),
  };
}

/** An MSK cluster or a self-managed Kafka source → a consumer group on the local Kafka cluster. */
const kafkaMapping: MappingMaterialiser = (input) => {
  const { id, p, base, sourceArn, s } = input;
  if (!sourceArn?.startsWith("arn:aws:kafka:") && !p.SelfManagedEventSource) return undefined;
  const topics = resolveValue(p.Topics ?? [], s.ctx, `${id}.Topics`) as string[];
  const kafkaConfig = (p.AmazonManagedKafkaEventSourceConfig ?? p.SelfManagedKafkaEventSourceConfig) as
    | { ConsumerGroupId?: unknown; SchemaRegistryConfig?: unknown }
    | undefined;
  const group = kafkaConfig?.ConsumerGroupId;
  const schemaRegistry = schemaRegistryOf(input, kafkaConfig);
  const pollers = (p.ProvisionedPollerConfig as { MaximumPollers?: unknown } | undefined)?.MaximumPollers;
  if (p.ProvisionedPollerConfig === undefined && base.reportBatchItemFailures)
    s.note(
      `${id}: ReportBatchItemFailures on a Kafka mapping needs provisioned mode; honoured locally anyway`,
    );
  const consumerGroupId =
    group === undefined ? base.uuid : resolveString(group, s.ctx, `${id}.ConsumerGroupId`);
  return {
    mapping: {
      ...base,
      ...streamOptions(input, { retry: -1 }),
      kind: "kafka",
      clusterArn: sourceArn ?? "self-managed",
      topics,
      consumerGroupId,
      batchSize: num(p.BatchSize, 100),
      maxBatchingWindowSeconds: num(p.MaximumBatchingWindowInSeconds, 0.5),
      ...(pollers !== undefined ? { maximumPollers: Number(pollers) } : {}),
      ...(schemaRegistry ? { schemaRegistry } : {}),
    },
    detail: `Kafka ${topics.join(",")} (group ${consumerGroupId}${schemaRegistry ? `, schema registry ${schemaRegistry.eventRecordFormat}` : ""}) → ${base.functionName}`,
  };
};

/** Mapping properties the local pollers read (each kind reads its own). */
const EMULATED_PROPERTIES = new Set([
  "FunctionName",
  "EventSourceArn",
  "Enabled",
  "BatchSize",
  "MaximumBatchingWindowInSeconds",
  "FunctionResponseTypes",
  "FilterCriteria",
  "ScalingConfig",
  "StartingPosition",
  "BisectBatchOnFunctionError",
  "MaximumRetryAttempts",
  "MaximumRecordAgeInSeconds",
  "DestinationConfig",
  "ParallelizationFactor",
  "TumblingWindowInSeconds",
  "Topics",
  "AmazonManagedKafkaEventSourceConfig",
  "SelfManagedKafkaEventSourceConfig",
  "SelfManagedEventSource",
  "ProvisionedPollerConfig",
  "StartingPositionTimestamp",
]);

/** What the local runtime does instead of a mapping property it does not emulate. */
const INSTEAD: Readonly<Record<string, string>> = {
  SourceAccessConfigurations: "the local Kafka cluster takes plaintext connections with no authentication",
  KmsKeyArn: "filter criteria are not encrypted locally",
  MetricsConfig: "event source mapping metrics are not emitted locally",
  LoggingConfig: "the poller's own logs are not written locally",
  Tags: "tags have no local effect",
  Queues: "Amazon MQ sources are not emulated",
  DocumentDBEventSourceConfig: "DocumentDB sources are not emulated",
};

/** Notes each property of a mapping that has no local effect, by name, with what happens instead. */
function noteIgnoredProperties(id: string, p: Record<string, unknown>, s: MaterialiseState): void {
  for (const key of Object.keys(p)) {
    if (EMULATED_PROPERTIES.has(key)) continue;
    s.note(`${id}: ${key} is not emulated; ${INSTEAD[key] ?? "the local mapping ignores it"}`);
  }
}

/** Tried in order; the first kind that recognises the source builds the mapping. */
const MAPPING_KINDS: readonly MappingMaterialiser[] = [
  sqsMapping,
  dynamodbMapping,
  kinesisMapping,
  kafkaMapping,
];

/** A stable UUID for a mapping, as Lambda gives each one. */
const mappingUuid = (stackName: string, id: string): string =>
  createHash("sha1")
    .update(`${stackName}/${id}`)
    .digest("hex")
    .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/, "$1-$2-$3-$4-$5");

/**
 * `AWS::Lambda::EventSourceMapping` → a local mapping, once every queue, table and function
 * exists. A disabled mapping is inert; a source no kind recognises is an error (reported unsupported).
 */
export function materialiseMapping(id: string, r: CfnResource, s: MaterialiseState): void {
  const p = r.Properties ?? {};
  if (p.Enabled === false || p.Enabled === "false") {
    s.report.inert.push({ logicalId: id, type: r.Type, detail: "disabled (Enabled: false)" });
    return;
  }
  const fnRef = resolveString(p.FunctionName, s.ctx, `${id}.FunctionName`);
  const fn = findFunction(s, fnRef);
  if (!fn) throw new Error(`function ${fnRef} was not materialised`);
  const filters = (
    (p.FilterCriteria as { Filters?: Array<{ Pattern?: unknown }> } | undefined)?.Filters ?? []
  ).map((f) => JSON.parse(resolveString(f.Pattern, s.ctx, `${id}.FilterCriteria`)) as unknown);
  const responseTypes = (resolveValue(p.FunctionResponseTypes ?? [], s.ctx, id) as string[]) ?? [];
  const input: MappingInput = {
    id,
    p,
    s,
    sourceArn:
      p.EventSourceArn === undefined
        ? undefined
        : resolveString(p.EventSourceArn, s.ctx, `${id}.EventSourceArn`),
    base: {
      logicalId: id,
      uuid: mappingUuid(s.stackName, id),
      functionName: fn.name,
      reportBatchItemFailures: responseTypes.includes("ReportBatchItemFailures"),
      filters,
    },
  };
  for (const kind of MAPPING_KINDS) {
    const made = kind(input);
    if (made) {
      noteIgnoredProperties(id, p, s);
      s.mappings.push(made.mapping);
      s.report.created.push({ logicalId: id, type: r.Type, detail: made.detail });
      return;
    }
  }
  throw new Error(`event source ${input.sourceArn ?? "(none)"} is not emulated`);
}
