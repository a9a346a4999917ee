import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { KinesisClient } from "@aws-sdk/client-kinesis";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Admin } from "kafkajs";
import type { CfnResource, CfnTemplate } from "./cloudAssembly.ts";
import { type ResolveContext, resolveString, resolveValue, UnresolvableError } from "./intrinsics.ts";
import type {
  LocalEventSourceMapping,
  LocalFunction,
  LocalQueue,
  LocalSchedule,
  LocalStream,
  LocalStreamConsumer,
  LocalTable,
  LocalTopic,
  MaterialisationReport,
} from "./model.ts";

/** A resource made local: what `Ref` and `Fn::GetAtt` resolve to. */
export interface Materialised {
  readonly ref: string;
  readonly attrs: Record<string, string>;
}

/**
 * Everything the materialisers share while one template is made local: the resolve context, the
 * report, the clients, and the local resources made so far (later materialisers look them up).
 */
export interface MaterialiseState {
  readonly template: CfnTemplate;
  readonly stackName: string;
  readonly region: string;
  readonly accountId: string;
  readonly prefix: string;
  readonly assetRoot: string | undefined;
  readonly brokers: readonly string[];
  /** What the functions reach the local Kafka at (the enforcing Kafka gateway), when not the brokers. */
  readonly functionBrokers: readonly string[];
  readonly kafkaRewrites: Readonly<Record<string, string>>;
  readonly sqs: SQSClient;
  readonly ddb: DynamoDBClient;
  /** The Kinesis client streams are made with; `undefined` when there is no local Kinesis. */
  readonly kinesis: KinesisClient | undefined;
  readonly ctx: ResolveContext;
  readonly report: MaterialisationReport;
  readonly done: Map<string, Materialised>;
  readonly failed: Map<string, string>;
  readonly queues: LocalQueue[];
  readonly tables: LocalTable[];
  readonly topics: LocalTopic[];
  readonly streams: LocalStream[];
  readonly streamConsumers: LocalStreamConsumer[];
  readonly functions: LocalFunction[];
  readonly mappings: LocalEventSourceMapping[];
  readonly schedules: LocalSchedule[];
  /** Adds a fidelity note once. */
  note(text: string): void;
  /**
   * Makes `imported` (an ARN or URL the template names for a resource it does not create) resolve
   * to `local` (its stand-in's) wherever the template computes it: mapping sources, policy
   * statements, variables (`ResolveContext.alias`). One table, so every reader sees the same thing.
   */
  alias(imported: string, local: string): void;
  /** The explicit name (resolved) or `<stack>-<logicalId>`, with the prefix, cut to `max`. */
  physicalName(explicit: unknown, logicalId: string, max: number, path: string): string;
  /** One admin client on the local Kafka cluster, connected on first use. */
  kafkaAdmin(): Promise<Admin>;
}

/** Makes one resource local. `undefined`: it is deferred or has no `Ref` (the materialiser says why). */
export type ResourceMaterialiser = (
  id: string,
  resource: CfnResource,
  state: MaterialiseState,
) => Promise<Materialised | undefined> | Materialised | undefined;

/** What the caller gives; the rest of the state is made from it. */
export type StateInputs = Pick<
  MaterialiseState,
  | "template"
  | "stackName"
  | "region"
  | "accountId"
  | "prefix"
  | "assetRoot"
  | "brokers"
  | "functionBrokers"
  | "kafkaRewrites"
  | "sqs"
  | "ddb"
  | "kinesis"
  | "kafkaAdmin"
>;

export function createState(inputs: StateInputs): MaterialiseState {
  const { template } = inputs;
  const done = new Map<string, Materialised>();
  const failed = new Map<string, string>();
  const report: MaterialisationReport = {
    created: [],
    inert: [],
    unsupported: [],
    refused: [],
    standIns: [],
    notes: [],
  };
  const noted = new Set<string>();
  const aliases = new Map<string, string>();
  const conditionCache = new Map<string, boolean>();
  const ctx: ResolveContext = {
    region: inputs.region,
    accountId: inputs.accountId,
    stackName: inputs.stackName,
    ...(template.Mappings ? { mappings: template.Mappings } : {}),
    alias: (value) => aliases.get(value),
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
  return {
    ...inputs,
    ctx,
    report,
    done,
    failed,
    queues: [],
    tables: [],
    topics: [],
    streams: [],
    streamConsumers: [],
    functions: [],
    mappings: [],
    schedules: [],
    note(text) {
      if (noted.has(text)) return;
      noted.add(text);
      report.notes.push(text);
    },
    alias(imported, local) {
      const prior = aliases.get(imported);
      if (prior !== undefined && prior !== local)
        throw new Error(`${imported} already stands for ${prior}, not ${local}`);
      aliases.set(imported, local);
    },
    physicalName(explicit, logicalId, max, path) {
      const base =
        explicit !== undefined ? resolveString(explicit, ctx, path) : `${inputs.stackName}-${logicalId}`;
      return `${inputs.prefix}${base}`.slice(0, max);
    },
  };
}

/** A property that may be absent, as a number. */
export const num = (v: unknown, fallback: number): number =>
  v === undefined || v === null ? fallback : Number(v);

/** The local function a `FunctionName` or target ARN names (name, ARN, or qualified ARN). */
export function findFunction(state: MaterialiseState, ref: string): LocalFunction | undefined {
  return state.functions.find(
    (f) =>
      f.name === ref || f.arn === ref || ref.endsWith(`:function:${f.name}`) || ref.startsWith(`${f.arn}:`),
  );
}
