import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { KinesisClient } from "@aws-sdk/client-kinesis";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { type Admin, Kafka, logLevel } from "kafkajs";
// The library's kafkajs 2.2.4 fixes are side effects of its Kafka entry point (lib/kafka/config.ts).
import "reliable-consumers/kafka";
import { createSqsClient } from "reliable-consumers/sqs";
import { accessModelOf } from "../services/iam/materialise.ts";
import type { DeferredMaterialiser } from "../services/localService.ts";
import { SERVICES } from "../services/registry.ts";
import type { CfnResource, CfnTemplate } from "./cloudAssembly.ts";
import { constantStrings } from "./constantStrings.ts";
import { inertReason, materialiseInert } from "./inert.ts";
import { referencedIds } from "./intrinsics.ts";
import { createState, type MaterialiseState, type ResourceMaterialiser } from "./materialiseState.ts";
import type { LocalApp } from "./model.ts";

export { handlerModule } from "../services/lambda/materialise.ts";
export { rateMs } from "../services/scheduler/materialise.ts";
export { INERT_TYPES } from "./inert.ts";

export interface MaterialiseOptions {
  readonly template: CfnTemplate;
  readonly stackName: string;
  /** Directory that `aws:asset:path` metadata is relative to (the cloud assembly). */
  readonly assetRoot?: string;
  /** Bootstrap servers of the local Kafka cluster that stands in for every MSK cluster. */
  readonly kafkaBrokers?: readonly string[];
  /** Where functions reach it instead (the enforcing Kafka gateway). @default kafkaBrokers */
  readonly functionKafkaBrokers?: readonly string[];
  /** Prepended to every generated or explicit queue, table and function name (test isolation). */
  readonly namePrefix?: string;
  /** @default AWS_REGION or us-east-1 */
  readonly region?: string;
  /** @default 000000000000 */
  readonly accountId?: string;
  /**
   * Variables set in every function that talks to the local Kafka cluster: the cluster has no TLS
   * and no SASL/IAM. @default { MSK_IAM_AUTH: "false", KAFKA_SSL: "false" }
   */
  readonly kafkaEnvRewrites?: Readonly<Record<string, string>>;
  readonly sqs?: SQSClient;
  readonly dynamodb?: DynamoDBClient;
  /** The client Kinesis streams are made with. @default none: Kinesis resources are reported unsupported */
  readonly kinesis?: KinesisClient;
  /** Makes this run's local credentials its own (several runtimes on one set of emulators). @default a random salt */
  readonly credentialSalt?: string;
}

/** What each CloudFormation type becomes locally, from every service. Types not here are inert (with a reason) or unsupported. */
const RESOURCE_MATERIALISERS: Readonly<Record<string, ResourceMaterialiser>> = Object.assign(
  {},
  ...SERVICES.map((service) => service.resources ?? {}),
);

const DEFERRED_MATERIALISERS: Readonly<Record<string, DeferredMaterialiser>> = Object.assign(
  {},
  ...SERVICES.map((service) => service.deferred ?? {}),
);

const CUSTOM_RESOURCES = SERVICES.flatMap((service) => service.customResources ?? []);

/** The materialiser for a resource: by type, then the custom resources services stand in for, then inert types. */
function materialiserOf(r: CfnResource): ResourceMaterialiser | undefined {
  return (
    RESOURCE_MATERIALISERS[r.Type] ??
    CUSTOM_RESOURCES.find((c) => c.matches(r))?.materialise ??
    (inertReason(r) ? materialiseInert : undefined)
  );
}

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
    if (state.has(id)) return;
    state.set(id, 1);
    for (const d of deps.get(id) ?? []) visit(d);
    state.set(id, 2);
    out.push(id);
  };
  for (const id of ids) visit(id);
  return out;
}

/** One admin client on the local cluster, connected on first use (templates without topics need no Kafka). */
function lazyKafkaAdmin(brokers: readonly string[]): { get(): Promise<Admin>; close(): Promise<void> } {
  let admin: Admin | undefined;
  return {
    async get() {
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
    },
    close: async () => admin?.disconnect(),
  };
}

/**
 * Creates a template's queues, tables (keys, GSIs/LSIs, stream, TTL) and Kafka topics on the
 * emulators, and resolves its functions, event source mappings and schedules to local
 * definitions with every intrinsic resolved to local names, URLs and ARNs. What the template uses
 * but does not create (an imported queue) gets a local stand-in, listed in `report.standIns`.
 * Everything it does not create is listed in `report.inert` (no local effect) or `report.unsupported`.
 */
export async function materialise(options: MaterialiseOptions): Promise<LocalApp> {
  const { template, stackName } = options;
  const brokers = options.kafkaBrokers ?? (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
  const admin = lazyKafkaAdmin(brokers);
  const s = createState({
    template,
    stackName,
    region: options.region ?? process.env.AWS_REGION ?? "us-east-1",
    accountId: options.accountId ?? "000000000000",
    prefix: options.namePrefix ?? "",
    assetRoot: options.assetRoot,
    brokers,
    functionBrokers: options.functionKafkaBrokers ?? brokers,
    kafkaRewrites: options.kafkaEnvRewrites ?? { MSK_IAM_AUTH: "false", KAFKA_SSL: "false" },
    sqs: options.sqs ?? createSqsClient(),
    ddb: options.dynamodb ?? new DynamoDBClient({}),
    kinesis: options.kinesis,
    kafkaAdmin: admin.get,
  });
  const resources = template.Resources ?? {};
  const deferred: Array<[string, CfnResource, DeferredMaterialiser]> = [];
  const unsupported = (id: string, r: CfnResource, error: unknown) =>
    s.report.unsupported.push({ logicalId: id, type: r.Type, detail: (error as Error).message });

  // Stand-ins for what the template uses but does not create (imported queues), before anything
  // resolves a value naming them.
  const constants = constantStrings(template, s.ctx);
  for (const service of SERVICES) await service.standIns?.(constants, s);

  // First pass, in dependency order: everything but what needs the other resources to exist.
  for (const id of creationOrder(resources)) {
    const r = resources[id]!;
    try {
      if (r.Condition && !s.ctx.condition(r.Condition)) {
        s.report.inert.push({ logicalId: id, type: r.Type, detail: `condition ${r.Condition} is false` });
        continue;
      }
      const later = DEFERRED_MATERIALISERS[r.Type];
      if (later) {
        deferred.push([id, r, later]);
        s.done.set(id, later.placeholder(id, s));
        continue;
      }
      const materialiser = materialiserOf(r);
      if (!materialiser) {
        s.report.unsupported.push({ logicalId: id, type: r.Type, detail: "resource type not emulated" });
        s.failed.set(id, "unsupported type");
        continue;
      }
      const m = await materialiser(id, r, s);
      if (m) s.done.set(id, m);
    } catch (error) {
      s.failed.set(id, (error as Error).message);
      unsupported(id, r, error);
    }
  }
  await admin.close();

  // Second pass: event source mappings and schedules, now that their functions and sources exist.
  for (const [id, r, later] of deferred) {
    try {
      later.resolve(id, r, s);
    } catch (error) {
      unsupported(id, r, error);
    }
  }

  return localAppOf(s, stackName, brokers, options.credentialSalt ?? crypto.randomUUID());
}

/** The materialised app: what the state holds once both passes are done. */
function localAppOf(
  s: MaterialiseState,
  stackName: string,
  brokers: readonly string[],
  credentialSalt: string,
): LocalApp {
  return {
    stackName,
    region: s.region,
    accountId: s.accountId,
    queues: s.queues,
    tables: s.tables,
    topics: s.topics,
    streams: s.streams,
    streamConsumers: s.streamConsumers,
    functions: s.functions,
    mappings: s.mappings,
    schedules: s.schedules,
    kafkaBrokers: brokers,
    report: s.report,
    access: accessModelOf(s, credentialSalt),
  };
}
