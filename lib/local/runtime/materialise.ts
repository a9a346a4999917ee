import { createHash } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { Kafka, logLevel } from "kafkajs";
import { createSqsClient } from "../../sqs/sqsClient.ts";
import { createDeclaredTopics, decodeTopicConfigs, type TopicDeclaration } from "../kafkaTopics.ts";
import type { CfnResource, CfnTemplate } from "./cloudAssembly.ts";
import {
  type ResolveContext,
  referencedIds,
  resolveString,
  resolveValue,
  UnresolvableError,
} from "./intrinsics.ts";
import type {
  LocalApp,
  LocalEventSourceMapping,
  LocalFunction,
  LocalQueue,
  LocalSchedule,
  LocalTable,
  LocalTopic,
  MaterialisationReport,
  OnFailureDestination,
  StreamMappingOptions,
} from "./model.ts";

export interface MaterialiseOptions {
  readonly template: CfnTemplate;
  readonly stackName: string;
  /** Directory that `aws:asset:path` metadata is relative to (the cloud assembly). */
  readonly assetRoot?: string;
  /** Bootstrap servers of the local Kafka cluster that stands in for every MSK cluster. */
  readonly kafkaBrokers?: readonly string[];
  /** Prepended to every generated or explicit queue, table and function name (test isolation). */
  readonly namePrefix?: string;
  /** @default AWS_REGION or us-east-1 */
  readonly region?: string;
  /** @default 000000000000 */
  readonly accountId?: string;
  /**
   * Variables rewritten in every function that talks to the local Kafka cluster: the cluster has
   * no TLS and no SASL/IAM. @default { MSK_IAM_AUTH: "false", KAFKA_SSL: "false" } (only where set)
   */
  readonly kafkaEnvRewrites?: Readonly<Record<string, string>>;
  readonly sqs?: SQSClient;
  readonly dynamodb?: DynamoDBClient;
}

/** Resource types with no local effect, and why. Listed in the report, never silently dropped. */
export const INERT_TYPES: Readonly<Record<string, string>> = {
  "AWS::IAM::Role": "IAM is not enforced locally: functions use the emulators' credentials",
  "AWS::IAM::Policy": "IAM is not enforced locally",
  "AWS::IAM::ManagedPolicy": "IAM is not enforced locally",
  "AWS::Lambda::Permission": "resource policies are not enforced locally",
  "AWS::SQS::QueuePolicy": "resource policies are not enforced locally",
  "AWS::Logs::LogGroup": "function logs go to the local log directory, one file per function",
  "AWS::CloudWatch::Alarm": "metrics and alarms are not evaluated locally (EMF lines stay in the logs)",
  "AWS::CloudWatch::Dashboard": "dashboards are not rendered locally",
  "AWS::SNS::Topic": "alarms are not evaluated locally, so nothing is published to alarm topics",
  "AWS::SNS::TopicPolicy": "resource policies are not enforced locally",
  "AWS::CDK::Metadata": "CDK metadata",
  "AWS::KMS::Key": "encryption at rest is not emulated",
  "AWS::KMS::Alias": "encryption at rest is not emulated",
  "AWS::EC2::SecurityGroup": "networking is not emulated: every function reaches every emulator",
  "AWS::EC2::SecurityGroupIngress": "networking is not emulated",
  "AWS::EC2::SecurityGroupEgress": "networking is not emulated",
  "AWS::MSK::Cluster": "the local Kafka cluster stands in for it",
  "AWS::MSK::ServerlessCluster": "the local Kafka cluster stands in for it",
};

const MSK_BROKERS =
  /^[a-z0-9.-]+\.kafka(-serverless)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?:\d+(\s*,\s*[a-z0-9.-]+\.kafka(-serverless)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?:\d+)*$/i;

interface Materialised {
  ref: string;
  attrs: Record<string, string>;
}

const num = (v: unknown, fallback: number): number => (v === undefined || v === null ? fallback : Number(v));

/** Topological order over Ref/GetAtt/Sub/DependsOn; cycles fall back to template order. */
function creationOrder(resources: Record<string, CfnResource>): string[] {
  const ids = Object.keys(resources);
  const deps = new Map<string, Set<string>>();
  for (const id of ids) {
    const r = resources[id]!;
    const d = referencedIds(r.Properties ?? {});
    for (const x of [r.DependsOn ?? []].flat()) d.add(x);
    deps.set(id, new Set([...d].filter((x) => x in resources && x !== id)));
  }
  const out: string[] = [];
  const state = new Map<string, 1 | 2>();
  const visit = (id: string) => {
    if (state.get(id) === 2 || state.get(id) === 1) return;
    state.set(id, 1);
    for (const d of deps.get(id) ?? []) visit(d);
    state.set(id, 2);
    out.push(id);
  };
  for (const id of ids) visit(id);
  return out;
}

/** `path/to/index.handler` → file + export, looking for .mjs, .js, .cjs as Lambda's Node runtime does. */
export function handlerModule(codeDir: string, handler: string): { codeFile: string; exportName: string } {
  const dot = handler.lastIndexOf(".");
  if (dot <= 0) throw new Error(`handler "${handler}" is not <module>.<export>`);
  const base = join(codeDir, handler.slice(0, dot));
  for (const ext of [".mjs", ".js", ".cjs"]) {
    if (existsSync(base + ext)) return { codeFile: base + ext, exportName: handler.slice(dot + 1) };
  }
  throw new Error(`no ${handler.slice(0, dot)}.{mjs,js,cjs} in ${codeDir}`);
}

/**
 * Creates a template's queues, tables (keys, GSIs/LSIs, stream, TTL) and Kafka topics on the
 * emulators, and resolves its functions, event source mappings and schedules to local
 * definitions with every intrinsic resolved to local names, URLs and ARNs. Everything it does not
 * create is listed in `report.inert` (no local effect) or `report.unsupported`.
 */
export async function materialise(options: MaterialiseOptions): Promise<LocalApp> {
  const { template, stackName } = options;
  const region = options.region ?? process.env.AWS_REGION ?? "us-east-1";
  const accountId = options.accountId ?? "000000000000";
  const prefix = options.namePrefix ?? "";
  const sqs = options.sqs ?? createSqsClient();
  const ddb = options.dynamodb ?? new DynamoDBClient({});
  const brokers = options.kafkaBrokers ?? (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
  const kafkaRewrites = options.kafkaEnvRewrites ?? { MSK_IAM_AUTH: "false", KAFKA_SSL: "false" };
  const resources = template.Resources ?? {};
  const report: MaterialisationReport = { created: [], inert: [], unsupported: [], notes: [] };
  const done = new Map<string, Materialised>();
  const failed = new Map<string, string>();
  const noteOnce = new Set<string>();
  const note = (text: string) => {
    if (!noteOnce.has(text)) {
      noteOnce.add(text);
      report.notes.push(text);
    }
  };

  const conditionCache = new Map<string, boolean>();
  const ctx: ResolveContext = {
    region,
    accountId,
    stackName,
    ...(template.Mappings ? { mappings: template.Mappings } : {}),
    ref(id) {
      const param = template.Parameters?.[id];
      if (param) {
        if (param.Default === undefined) throw new UnresolvableError(`parameter ${id} has no default`);
        return String(param.Default);
      }
      const m = done.get(id);
      if (m) return m.ref;
      throw new UnresolvableError(
        failed.has(id) ? `${id} was not materialised (${failed.get(id)})` : `unknown reference ${id}`,
      );
    },
    getAtt(id, attr) {
      const m = done.get(id);
      if (!m)
        throw new UnresolvableError(failed.has(id) ? `${id} was not materialised` : `unknown resource ${id}`);
      const v = m.attrs[attr];
      if (v === undefined) throw new UnresolvableError(`${id}.${attr} is not available locally`);
      return v;
    },
    condition(name) {
      const cached = conditionCache.get(name);
      if (cached !== undefined) return cached;
      const def = template.Conditions?.[name];
      if (def === undefined) throw new UnresolvableError(`unknown condition ${name}`);
      const v = resolveValue(def, ctx, `Conditions.${name}`) === true;
      conditionCache.set(name, v);
      return v;
    },
  };

  const physicalName = (explicit: unknown, logicalId: string, max: number, path: string): string => {
    const base = explicit !== undefined ? resolveString(explicit, ctx, path) : `${stackName}-${logicalId}`;
    return `${prefix}${base}`.slice(0, max);
  };

  const queues: LocalQueue[] = [];
  const tables: LocalTable[] = [];
  const topics: LocalTopic[] = [];
  const functions: LocalFunction[] = [];
  const pendingMappings: Array<[string, CfnResource]> = [];
  const pendingRules: Array<[string, CfnResource]> = [];

  let admin: ReturnType<Kafka["admin"]> | undefined;
  const kafkaAdmin = async () => {
    if (!admin) {
      if (brokers.length === 0)
        throw new Error("no local Kafka brokers (KAFKA_BROKERS) for the MSK resources");
      admin = new Kafka({
        clientId: "local-runtime-materialiser",
        brokers: [...brokers],
        logLevel: logLevel.NOTHING,
      }).admin();
      await admin.connect();
    }
    return admin;
  };

  const createQueue = async (id: string, p: Record<string, unknown>): Promise<Materialised> => {
    const fifo = p.FifoQueue === true || p.FifoQueue === "true";
    let name = physicalName(p.QueueName, id, fifo ? 75 : 80, `${id}.QueueName`);
    if (fifo && !name.endsWith(".fifo")) name = `${name}.fifo`;
    const attributes: Record<string, string> = {};
    const copy = [
      "VisibilityTimeout",
      "MessageRetentionPeriod",
      "DelaySeconds",
      "MaximumMessageSize",
      "ReceiveMessageWaitTimeSeconds",
      "FifoQueue",
      "ContentBasedDeduplication",
      "DeduplicationScope",
      "FifoThroughputLimit",
    ];
    for (const k of copy) {
      if (p[k] !== undefined) attributes[k] = String(resolveValue(p[k], ctx, `${id}.${k}`));
    }
    let redrive: { deadLetterTargetArn: string; maxReceiveCount: number } | undefined;
    if (p.RedrivePolicy !== undefined) {
      const raw = resolveValue(p.RedrivePolicy, ctx, `${id}.RedrivePolicy`);
      const r = (typeof raw === "string" ? JSON.parse(raw) : raw) as {
        deadLetterTargetArn: string;
        maxReceiveCount: unknown;
      };
      redrive = { deadLetterTargetArn: r.deadLetterTargetArn, maxReceiveCount: Number(r.maxReceiveCount) };
      attributes.RedrivePolicy = JSON.stringify(redrive);
    }
    if (p.RedriveAllowPolicy !== undefined) {
      const raw = resolveValue(p.RedriveAllowPolicy, ctx, `${id}.RedriveAllowPolicy`);
      attributes.RedriveAllowPolicy = typeof raw === "string" ? raw : JSON.stringify(raw);
    }
    if (p.KmsMasterKeyId !== undefined || p.SqsManagedSseEnabled !== undefined)
      note("SQS encryption settings are accepted and not emulated");
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn", "VisibilityTimeout"] }),
    );
    const q: LocalQueue = {
      logicalId: id,
      name,
      url: QueueUrl!,
      arn: Attributes!.QueueArn!,
      fifo,
      visibilityTimeoutSeconds: Number(Attributes?.VisibilityTimeout ?? 30),
      ...(redrive
        ? { deadLetterQueueArn: redrive.deadLetterTargetArn, maxReceiveCount: redrive.maxReceiveCount }
        : {}),
    };
    queues.push(q);
    report.created.push({
      logicalId: id,
      type: "AWS::SQS::Queue",
      detail: name + (redrive ? ` (redrive after ${redrive.maxReceiveCount} receives)` : ""),
    });
    return { ref: q.url, attrs: { Arn: q.arn, QueueName: name, QueueUrl: q.url } };
  };

  const createTable = async (id: string, p: Record<string, unknown>): Promise<Materialised> => {
    const name = physicalName(p.TableName, id, 255, `${id}.TableName`);
    const billing = String(p.BillingMode ?? "PROVISIONED");
    const throughput = (t: unknown) =>
      billing === "PAY_PER_REQUEST"
        ? {}
        : {
            ProvisionedThroughput: (t as CreateTableCommandInput["ProvisionedThroughput"]) ?? {
              ReadCapacityUnits: 5,
              WriteCapacityUnits: 5,
            },
          };
    const resolved = resolveValue(p, ctx, id) as Record<string, unknown>;
    const gsis = (resolved.GlobalSecondaryIndexes as Array<Record<string, unknown>> | undefined)?.map(
      (g) => ({
        IndexName: g.IndexName as string,
        KeySchema: g.KeySchema as never,
        Projection: g.Projection as never,
        ...throughput(g.ProvisionedThroughput),
      }),
    );
    const lsis = (resolved.LocalSecondaryIndexes as Array<Record<string, unknown>> | undefined)?.map((l) => ({
      IndexName: l.IndexName as string,
      KeySchema: l.KeySchema as never,
      Projection: l.Projection as never,
    }));
    const stream = resolved.StreamSpecification as { StreamViewType?: string } | undefined;
    const input: CreateTableCommandInput = {
      TableName: name,
      AttributeDefinitions: resolved.AttributeDefinitions as AttributeDefinition[],
      KeySchema: resolved.KeySchema as never,
      BillingMode: billing === "PAY_PER_REQUEST" ? "PAY_PER_REQUEST" : "PROVISIONED",
      ...throughput(resolved.ProvisionedThroughput),
      ...(gsis?.length ? { GlobalSecondaryIndexes: gsis } : {}),
      ...(lsis?.length ? { LocalSecondaryIndexes: lsis } : {}),
      ...(stream?.StreamViewType
        ? { StreamSpecification: { StreamEnabled: true, StreamViewType: stream.StreamViewType as never } }
        : {}),
    };
    if (resolved.SSESpecification || resolved.PointInTimeRecoverySpecification)
      note("DynamoDB encryption and point-in-time recovery are accepted and not emulated");
    let description: TableDescription | undefined;
    try {
      description = (await ddb.send(new CreateTableCommand(input))).TableDescription;
    } catch (error) {
      if (!(error instanceof ResourceInUseException)) throw error;
      note(`table ${name} already existed on the emulator; reused as is`);
      description = (await ddb.send(new DescribeTableCommand({ TableName: name }))).Table;
    }
    const ttl = resolved.TimeToLiveSpecification as { AttributeName?: string; Enabled?: boolean } | undefined;
    if (ttl?.Enabled && ttl.AttributeName) {
      await ddb
        .send(
          new UpdateTimeToLiveCommand({
            TableName: name,
            TimeToLiveSpecification: { AttributeName: ttl.AttributeName, Enabled: true },
          }),
        )
        .catch((e: Error) => {
          if (!/already enabled/i.test(e.message)) throw e;
        });
    }
    const t: LocalTable = {
      logicalId: id,
      name,
      arn: description?.TableArn ?? `arn:aws:dynamodb:${region}:${accountId}:table/${name}`,
      ...(description?.LatestStreamArn ? { streamArn: description.LatestStreamArn } : {}),
      ...(stream?.StreamViewType ? { streamViewType: stream.StreamViewType } : {}),
      ...(ttl?.Enabled && ttl.AttributeName ? { ttlAttribute: ttl.AttributeName } : {}),
    };
    tables.push(t);
    report.created.push({
      logicalId: id,
      type: "AWS::DynamoDB::Table",
      detail:
        name +
        [
          gsis?.length ? ` GSIs ${gsis.map((g) => g.IndexName).join(",")}` : "",
          t.streamArn ? ` stream ${t.streamViewType}` : "",
          t.ttlAttribute ? ` TTL ${t.ttlAttribute}` : "",
        ].join(""),
    });
    return {
      ref: name,
      attrs: { Arn: t.arn, ...(t.streamArn ? { StreamArn: t.streamArn } : {}) },
    };
  };

  const createTopic = async (id: string, type: string, declared: TopicDeclaration): Promise<Materialised> => {
    // As declared (partitions, replication, configs), fitted to the local cluster and checked.
    const [created] = await createDeclaredTopics(await kafkaAdmin(), [declared]);
    const actual = created?.partitions ?? 0;
    for (const fitted of created?.fitted ?? []) note(`topic ${declared.name}: ${fitted}`);
    const name = declared.name;
    const partitions = declared.partitions;
    const arn = `arn:aws:kafka:${region}:${accountId}:topic/local/${name}`;
    topics.push({
      logicalId: id,
      name,
      arn,
      ...(partitions ? { partitions } : {}),
      actualPartitions: actual,
    });
    report.created.push({ logicalId: id, type, detail: `${name} (${actual} partitions)` });
    return { ref: arn, attrs: { TopicArn: arn, TopicName: name } };
  };

  const createFunction = (id: string, r: CfnResource): Materialised => {
    const p = r.Properties ?? {};
    const name = physicalName(p.FunctionName, id, 64, `${id}.FunctionName`);
    const runtime = String(p.Runtime ?? "");
    if (!runtime.startsWith("nodejs"))
      throw new Error(`runtime ${runtime || "(image)"} cannot run locally (Node.js only)`);
    const handler = String(p.Handler ?? "index.handler");
    const code = p.Code as Record<string, unknown> | undefined;
    const assetPath = r.Metadata?.["aws:asset:path"];
    let codeDir: string;
    const s3Key = typeof code?.S3Key === "string" ? /^([0-9a-f]{64})\.zip$/.exec(code.S3Key)?.[1] : undefined;
    if (typeof assetPath === "string" && options.assetRoot) {
      codeDir = join(options.assetRoot, assetPath);
    } else if (s3Key && options.assetRoot && existsSync(join(options.assetRoot, `asset.${s3Key}`))) {
      // No asset metadata (synthesized without the CLI's context): the S3 key names the asset hash.
      codeDir = join(options.assetRoot, `asset.${s3Key}`);
    } else if (typeof code?.ZipFile === "string") {
      const source = resolveString(code.ZipFile, ctx, `${id}.Code.ZipFile`);
      codeDir = join(
        tmpdir(),
        "local-runtime-inline",
        createHash("sha256").update(source).digest("hex").slice(0, 16),
      );
      mkdirSync(codeDir, { recursive: true });
      writeFileSync(join(codeDir, "index.js"), source);
    } else {
      throw new Error("code is not a local asset (no aws:asset:path metadata) nor inline ZipFile");
    }
    const { codeFile, exportName } = handlerModule(codeDir, handler);
    const env: Record<string, string> = {};
    const vars = ((p.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ??
      {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(vars))
      env[k] = resolveString(v, ctx, `${id}.Environment.Variables.${k}`);
    let usesKafka = false;
    for (const [k, v] of Object.entries(env)) {
      if (MSK_BROKERS.test(v)) {
        env[k] = brokers.join(",");
        usesKafka = true;
        note(`${name}: ${k} (MSK bootstrap brokers) → the local Kafka cluster`);
      }
    }
    if (usesKafka) {
      for (const [k, v] of Object.entries(kafkaRewrites)) {
        if (k in env && env[k] !== v) {
          note(`${name}: ${k}=${env[k]} → ${v} (the local Kafka cluster has no TLS or IAM auth)`);
          env[k] = v;
        }
      }
    }
    if (p.VpcConfig) note("VPC configuration is accepted and not emulated");
    if (p.Layers)
      report.unsupported.push({
        logicalId: id,
        type: r.Type,
        detail: "Lambda layers are not mounted locally",
      });
    const arn = `arn:aws:lambda:${region}:${accountId}:function:${name}`;
    const reserved = p.ReservedConcurrentExecutions;
    const cdkPath = r.Metadata?.["aws:cdk:path"];
    functions.push({
      logicalId: id,
      name,
      arn,
      ...(typeof cdkPath === "string" ? { cdkPath } : {}),
      codeFile,
      exportName,
      handler,
      runtime,
      timeoutSeconds: num(p.Timeout, 3),
      memoryMb: num(p.MemorySize, 128),
      environment: env,
      ...(reserved !== undefined ? { reservedConcurrency: Number(reserved) } : {}),
    });
    report.created.push({
      logicalId: id,
      type: r.Type,
      detail: `${name} (${runtime}, ${handler}, timeout ${num(p.Timeout, 3)} s)`,
    });
    return { ref: name, attrs: { Arn: arn } };
  };

  // Resources, in dependency order.
  for (const id of creationOrder(resources)) {
    const r = resources[id]!;
    const p = r.Properties ?? {};
    try {
      if (r.Condition && !ctx.condition(r.Condition)) {
        report.inert.push({ logicalId: id, type: r.Type, detail: `condition ${r.Condition} is false` });
        continue;
      }
      let m: Materialised | undefined;
      switch (r.Type) {
        case "AWS::SQS::Queue":
          m = await createQueue(id, p);
          break;
        case "AWS::DynamoDB::Table":
        case "AWS::DynamoDB::GlobalTable":
          m = await createTable(id, p);
          break;
        case "AWS::MSK::Topic":
          m = await createTopic(id, r.Type, {
            name: resolveString(p.TopicName, ctx, `${id}.TopicName`),
            ...(p.PartitionCount === undefined ? {} : { partitions: Number(p.PartitionCount) }),
            ...(p.ReplicationFactor === undefined ? {} : { replicationFactor: Number(p.ReplicationFactor) }),
            ...(typeof p.Configs === "string" ? { configs: decodeTopicConfigs(p.Configs) } : {}),
          });
          break;
        case "AWS::Lambda::Function":
          m = createFunction(id, r);
          break;
        case "AWS::Lambda::EventSourceMapping":
          pendingMappings.push([id, r]);
          m = { ref: `${prefix}${stackName}-${id}`, attrs: {} };
          break;
        case "AWS::Events::Rule":
          pendingRules.push([id, r]);
          m = {
            ref: `${prefix}${stackName}-${id}`,
            attrs: { Arn: `arn:aws:events:${region}:${accountId}:rule/${prefix}${stackName}-${id}` },
          };
          break;
        default: {
          const topic =
            (p.Topic as
              | { Name?: unknown; Partitions?: unknown; ReplicationFactor?: unknown; Configs?: unknown }
              | undefined) ?? undefined;
          if (
            (r.Type === "Custom::KafkaTopic" || r.Type.startsWith("Custom::")) &&
            topic?.Name !== undefined
          ) {
            m = await createTopic(id, r.Type, {
              name: resolveString(topic.Name, ctx, `${id}.Topic.Name`),
              ...(topic.Partitions === undefined ? {} : { partitions: Number(topic.Partitions) }),
              ...(topic.ReplicationFactor === undefined
                ? {}
                : { replicationFactor: Number(topic.ReplicationFactor) }),
              ...(typeof topic.Configs === "object" && topic.Configs !== null
                ? {
                    configs: Object.fromEntries(
                      Object.entries(topic.Configs as Record<string, unknown>).map(([k, v]) => [
                        k,
                        String(v),
                      ]),
                    ),
                  }
                : {}),
            });
            break;
          }
          const reason =
            INERT_TYPES[r.Type] ??
            (r.Type.startsWith("AWS::EC2::") ? "networking is not emulated" : undefined);
          if (reason) {
            report.inert.push({ logicalId: id, type: r.Type, detail: reason });
            m = {
              ref: inertRef(r.Type, id, stackName, region, accountId),
              attrs: inertAttrs(r.Type, id, stackName, region, accountId),
            };
          } else {
            report.unsupported.push({ logicalId: id, type: r.Type, detail: "resource type not emulated" });
            failed.set(id, "unsupported type");
          }
        }
      }
      if (m) done.set(id, m);
    } catch (error) {
      failed.set(id, (error as Error).message);
      report.unsupported.push({ logicalId: id, type: r.Type, detail: (error as Error).message });
    }
  }
  await admin?.disconnect();

  const findFunction = (ref: string) =>
    functions.find(
      (f) =>
        f.name === ref || f.arn === ref || ref.endsWith(`:function:${f.name}`) || ref.startsWith(`${f.arn}:`),
    );

  const onFailureOf = (p: Record<string, unknown>, id: string): OnFailureDestination | undefined => {
    const dest = (p.DestinationConfig as { OnFailure?: { Destination?: unknown } } | undefined)?.OnFailure
      ?.Destination;
    if (dest === undefined) return undefined;
    const arn = resolveString(dest, ctx, `${id}.DestinationConfig.OnFailure.Destination`);
    if (arn.startsWith("kafka://")) return { kind: "kafka", topic: arn.slice("kafka://".length) };
    const queue = queues.find((q) => q.arn === arn);
    if (queue) return { kind: "sqs", queue };
    throw new Error(`on-failure destination ${arn} is not emulated (SQS queues and kafka:// topics are)`);
  };

  const mappings: LocalEventSourceMapping[] = [];
  for (const [id, r] of pendingMappings) {
    const p = r.Properties ?? {};
    try {
      if (p.Enabled === false || p.Enabled === "false") {
        report.inert.push({ logicalId: id, type: r.Type, detail: "disabled (Enabled: false)" });
        continue;
      }
      const fnRef = resolveString(p.FunctionName, ctx, `${id}.FunctionName`);
      const fn = findFunction(fnRef);
      if (!fn) throw new Error(`function ${fnRef} was not materialised`);
      const filters = (
        (p.FilterCriteria as { Filters?: Array<{ Pattern?: unknown }> } | undefined)?.Filters ?? []
      ).map((f) => JSON.parse(resolveString(f.Pattern, ctx, `${id}.FilterCriteria`)) as unknown);
      const responseTypes = (resolveValue(p.FunctionResponseTypes ?? [], ctx, id) as string[]) ?? [];
      const base = {
        logicalId: id,
        uuid: createHash("sha1")
          .update(`${stackName}/${id}`)
          .digest("hex")
          .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/, "$1-$2-$3-$4-$5"),
        functionName: fn.name,
        reportBatchItemFailures: responseTypes.includes("ReportBatchItemFailures"),
        filters,
      };
      const sourceArn =
        p.EventSourceArn === undefined
          ? undefined
          : resolveString(p.EventSourceArn, ctx, `${id}.EventSourceArn`);
      const streamOptions = (defaults: { retry: number }): StreamMappingOptions => {
        const onFailure = onFailureOf(p, id);
        let retries = num(p.MaximumRetryAttempts, defaults.retry);
        if (retries === -1 && onFailure?.kind === "kafka") retries = 10; // documented: infinite + Kafka destination → 10
        const start = String(p.StartingPosition ?? "TRIM_HORIZON");
        if (start !== "TRIM_HORIZON" && start !== "LATEST")
          throw new Error(`StartingPosition ${start} is not emulated`);
        return {
          bisectBatchOnFunctionError:
            p.BisectBatchOnFunctionError === true || p.BisectBatchOnFunctionError === "true",
          maximumRetryAttempts: retries,
          maximumRecordAgeSeconds: num(p.MaximumRecordAgeInSeconds, -1),
          startingPosition: start,
          ...(onFailure ? { onFailure } : {}),
        };
      };
      const queue = sourceArn ? queues.find((q) => q.arn === sourceArn) : undefined;
      const table = sourceArn
        ? tables.find((t) => t.streamArn === sourceArn || sourceArn.startsWith(`${t.arn}/stream/`))
        : undefined;
      if (queue) {
        const max = (p.ScalingConfig as { MaximumConcurrency?: unknown } | undefined)?.MaximumConcurrency;
        mappings.push({
          ...base,
          kind: "sqs",
          queue,
          batchSize: num(p.BatchSize, 10),
          maxBatchingWindowSeconds: num(p.MaximumBatchingWindowInSeconds, 0),
          ...(max !== undefined ? { maxConcurrency: Number(max) } : {}),
        });
        report.created.push({ logicalId: id, type: r.Type, detail: `SQS ${queue.name} → ${fn.name}` });
      } else if (table?.streamArn) {
        const pf = num(p.ParallelizationFactor, 1);
        if (pf > 1)
          note(`${id}: ParallelizationFactor ${pf} runs as 1 locally (one batch per shard at a time)`);
        if (p.TumblingWindowInSeconds) throw new Error("tumbling windows are not emulated");
        mappings.push({
          ...base,
          ...streamOptions({ retry: -1 }),
          kind: "dynamodb",
          table,
          streamArn: table.streamArn,
          batchSize: num(p.BatchSize, 100),
          maxBatchingWindowSeconds: num(p.MaximumBatchingWindowInSeconds, 0),
          parallelizationFactor: pf,
        });
        report.created.push({
          logicalId: id,
          type: r.Type,
          detail: `DynamoDB stream ${table.name} → ${fn.name}`,
        });
      } else if (sourceArn?.startsWith("arn:aws:kafka:") || p.SelfManagedEventSource) {
        const topicList = resolveValue(p.Topics ?? [], ctx, `${id}.Topics`) as string[];
        const group =
          (p.AmazonManagedKafkaEventSourceConfig as { ConsumerGroupId?: unknown } | undefined)
            ?.ConsumerGroupId ??
          (p.SelfManagedKafkaEventSourceConfig as { ConsumerGroupId?: unknown } | undefined)?.ConsumerGroupId;
        const pollers = (p.ProvisionedPollerConfig as { MaximumPollers?: unknown } | undefined)
          ?.MaximumPollers;
        const provisioned = p.ProvisionedPollerConfig !== undefined;
        if (!provisioned && base.reportBatchItemFailures)
          note(
            `${id}: ReportBatchItemFailures on a Kafka mapping needs provisioned mode; honoured locally anyway`,
          );
        mappings.push({
          ...base,
          ...streamOptions({ retry: -1 }),
          kind: "kafka",
          clusterArn: sourceArn ?? "self-managed",
          topics: topicList,
          consumerGroupId:
            group === undefined ? base.uuid : resolveString(group, ctx, `${id}.ConsumerGroupId`),
          batchSize: num(p.BatchSize, 100),
          maxBatchingWindowSeconds: num(p.MaximumBatchingWindowInSeconds, 0.5),
          ...(pollers !== undefined ? { maximumPollers: Number(pollers) } : {}),
        });
        report.created.push({
          logicalId: id,
          type: r.Type,
          detail: `Kafka ${topicList.join(",")} (group ${String(mappings.at(-1) && (mappings.at(-1) as { consumerGroupId: string }).consumerGroupId)}) → ${fn.name}`,
        });
      } else {
        throw new Error(`event source ${sourceArn ?? "(none)"} is not emulated`);
      }
    } catch (error) {
      report.unsupported.push({ logicalId: id, type: r.Type, detail: (error as Error).message });
    }
  }

  const schedules: LocalSchedule[] = [];
  for (const [id, r] of pendingRules) {
    const p = r.Properties ?? {};
    try {
      if (p.State === "DISABLED") {
        report.inert.push({ logicalId: id, type: r.Type, detail: "disabled" });
        continue;
      }
      if (p.ScheduleExpression === undefined)
        throw new Error("event-pattern rules are not emulated (schedules are)");
      const expression = resolveString(p.ScheduleExpression, ctx, `${id}.ScheduleExpression`);
      const everyMs = rateMs(expression);
      const targets = (p.Targets as Array<Record<string, unknown>> | undefined) ?? [];
      const local: Array<{ functionName: string; input?: unknown }> = [];
      let retryAttempts = 2;
      for (const t of targets) {
        const arn = resolveString(t.Arn, ctx, `${id}.Targets.Arn`);
        const fn = findFunction(arn);
        if (!fn) throw new Error(`target ${arn} is not a local function`);
        const input =
          t.Input === undefined ? undefined : JSON.parse(resolveString(t.Input, ctx, `${id}.Targets.Input`));
        local.push({ functionName: fn.name, ...(input !== undefined ? { input } : {}) });
        const rp = t.RetryPolicy as { MaximumRetryAttempts?: unknown } | undefined;
        if (rp?.MaximumRetryAttempts !== undefined) retryAttempts = Number(rp.MaximumRetryAttempts);
      }
      const name = `${prefix}${stackName}-${id}`;
      schedules.push({
        logicalId: id,
        name,
        arn: done.get(id)!.attrs.Arn!,
        expression,
        everyMs,
        targets: local,
        retryAttempts,
      });
      report.created.push({
        logicalId: id,
        type: r.Type,
        detail: `${expression} → ${local.map((t) => t.functionName).join(", ")}`,
      });
    } catch (error) {
      report.unsupported.push({ logicalId: id, type: r.Type, detail: (error as Error).message });
    }
  }

  return {
    stackName,
    region,
    accountId,
    queues,
    tables,
    topics,
    functions,
    mappings,
    schedules,
    kafkaBrokers: brokers,
    report,
  };
}

/** `rate(5 minutes)` → ms. cron() schedules are not emulated. */
export function rateMs(expression: string): number {
  const m = /^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$/.exec(expression.trim());
  if (!m) throw new Error(`schedule ${expression} is not emulated (rate() expressions are)`);
  const unit = m[2]!.startsWith("minute") ? 60_000 : m[2]!.startsWith("hour") ? 3_600_000 : 86_400_000;
  return Number(m[1]) * unit;
}

function inertRef(type: string, id: string, stack: string, region: string, account: string): string {
  if (type === "AWS::MSK::Cluster" || type === "AWS::MSK::ServerlessCluster")
    return `arn:aws:kafka:${region}:${account}:cluster/local/${id}`;
  if (type === "AWS::IAM::Role") return `${stack}-${id}`;
  return `${stack}-${id}`;
}

function inertAttrs(
  type: string,
  id: string,
  stack: string,
  region: string,
  account: string,
): Record<string, string> {
  switch (type) {
    case "AWS::IAM::Role":
      return { Arn: `arn:aws:iam::${account}:role/${stack}-${id}`, RoleId: id };
    case "AWS::Logs::LogGroup":
      return { Arn: `arn:aws:logs:${region}:${account}:log-group:${stack}-${id}:*` };
    case "AWS::KMS::Key":
      return { Arn: `arn:aws:kms:${region}:${account}:key/${id}`, KeyId: id };
    case "AWS::EC2::SecurityGroup":
      return { GroupId: `sg-${id.toLowerCase().slice(0, 17)}` };
    case "AWS::MSK::Cluster":
    case "AWS::MSK::ServerlessCluster":
      return { Arn: `arn:aws:kafka:${region}:${account}:cluster/local/${id}` };
    default:
      return { Arn: `arn:aws:local:${region}:${account}:${id}` };
  }
}
