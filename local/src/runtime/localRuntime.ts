import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import { KinesisClient } from "@aws-sdk/client-kinesis";
import { generateAuthTokenFromCredentialsProvider } from "aws-msk-iam-sasl-signer-js";
import { type ISocketFactory, Kafka, logLevel, type SASLOptions } from "kafkajs";
// The library's kafkajs 2.2.4 fixes are side effects of its Kafka entry point (lib/kafka/config.ts).
import "reliable-consumers/kafka";
import { createSqsClient } from "reliable-consumers/sqs";
import type { DenialLog } from "../enforcement/denials.ts";
import { type LocalEnforcement, startLocalEnforcement } from "../enforcement/localEnforcement.ts";
import { FunctionHost, type FunctionHostOptions } from "../services/lambda/functionHost.ts";
import { refuseUngrantedMappings } from "../services/lambda/mappingRole.ts";
import { SERVICES } from "../services/registry.ts";
import { scheduleEventSource } from "../services/scheduler/eventSource.ts";
import type { EventSource } from "../services/sqs/eventSource.ts";
import type { CfnTemplate } from "./cloudAssembly.ts";
import { loadCloudAssembly } from "./cloudAssembly.ts";
import { materialise } from "./materialise.ts";
import type { LocalApp, LocalEventSourceMapping, LocalFunction } from "./model.ts";

/** Options of `startLocalRuntime`: what to run (`cdkOut` or `template`), and how. */
export interface LocalRuntimeOptions {
  /**
   * A synthesized cloud assembly directory (`cdk.out`, as `synthesize` returns it). Give this or
   * `template`. @default none: `template` is used
   */
  readonly cdkOut?: string;
  /** One CloudFormation template, parsed (give `assetRoot` with it). @default none: `cdkOut` is used */
  readonly template?: CfnTemplate;
  /**
   * With `template`: the directory its functions' asset paths (`aws:asset:path`) are relative to,
   * usually the `cdk.out` it came from. @default none: only inline code (`ZipFile`) can run
   */
  readonly assetRoot?: string;
  /**
   * Which stack of the assembly (with `template`: the name the app is reported under).
   * @default the assembly's only stack (an error if it has several); `LocalStack` for a template
   */
  readonly stackName?: string;
  /**
   * The emulator variables (AWS_ENDPOINT_URL_*, AWS_REGION, credentials, KAFKA_BROKERS).
   * @default the current process.env values
   */
  readonly emulatorEnv?: Readonly<Record<string, string>>;
  /**
   * Prepended to queue, table and function names (several runtimes on one set of emulators).
   * @default "" (the template's names)
   */
  readonly namePrefix?: string;
  /**
   * Extra variables for some functions (like `sam local --env-vars`), keyed by function name,
   * logical id or a part of the CDK path; they win over the template's. @default none
   */
  readonly envOverrides?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** A directory for one log file per function (`<name>.log`). @default none: logs go to stderr */
  readonly logDir?: string;
  /**
   * Also copy each function's output to the stream this returns for it (the CLI prints it
   * prefixed with the function's name). @default none
   */
  readonly logTee?: FunctionHostOptions["logTee"];
  /**
   * A ceiling on execution environments (worker threads) per function, to bound memory on a
   * small machine. @default none: the function's concurrency
   */
  readonly maxEnvironmentsPerFunction?: number;
  /** Start the event source mappings and schedules. @default true */
  readonly startTriggers?: boolean;
  /**
   * Run each schedule first after this many milliseconds, then at its rate (a test need not wait
   * a whole period). @default the schedule's period
   */
  readonly scheduleFirstRunAfterMs?: number;
  /** Called after each invocation with the function and its result (progress, tests). @default none */
  readonly onInvoke?: FunctionHostOptions["onInvoke"];
  /**
   * Modules (absolute paths) every execution environment imports before the function's code:
   * instrumentation that must live inside the environment. @default none
   */
  readonly preload?: FunctionHostOptions["preload"];
  /**
   * Called when an execution environment dies under an invocation (killed, crashed or timed
   * out), with the environment's id, the reason and the event. @default none
   */
  readonly onCrash?: FunctionHostOptions["onCrash"];
  /**
   * Emulator variables for the functions only, over `emulatorEnv` (e.g. a fault proxy in front of
   * the functions' SDK clients while the runtime's own pollers go direct). @default none
   */
  readonly functionEmulatorEnv?: Readonly<Record<string, string>>;
  /**
   * Called with each SDK client the runtime itself uses (SQS, DynamoDB, Streams), to add
   * middleware (fault injection, counting). @default none
   */
  readonly instrument?: (client: RuntimeClient) => void;
  /**
   * How the runtime's own Kafka clients (mappings, setup) open broker connections.
   * @default kafkajs's own (a plain TCP socket)
   */
  readonly kafkaSocketFactory?: ISocketFactory;
  /**
   * Each function acts as its role: every SQS, DynamoDB and Streams call of its code and of its
   * event source mappings is checked against the template's IAM policies, and denied as AWS would
   * deny it (`denials` lists each one). @default true
   */
  readonly enforceIam?: boolean;
  /**
   * The clock the stream mappings (DynamoDB Streams, Kafka) read a record's age by, for
   * MaximumRecordAgeInSeconds: a test moves it to bring records past their age instead of waiting.
   * @default Date.now
   */
  readonly mappingClock?: () => number;
}

/** An SDK client the local runtime itself uses, as `LocalRuntimeOptions.instrument` receives it. */
export type RuntimeClient =
  | DynamoDBClient
  | DynamoDBStreamsClient
  | KinesisClient
  | ReturnType<typeof createSqsClient>;

/** A running local runtime: the materialised app, its function host and triggers. */
export interface LocalRuntime {
  /** The app as materialised: its queues, tables, topics, functions, mappings, and the report. */
  readonly app: LocalApp;
  /**
   * The execution environments of the functions: invoke one directly, or terminate a busy one
   * (`host.busyEnvironments(fn)[i].kill()`) to play a function that crashes.
   */
  readonly host: FunctionHost;
  /** The running event source mappings and schedules, each with its counters (`stats`). */
  readonly eventSources: EventSource[];
  /** Every call refused for lack of a grant, with the grant that would allow it. */
  readonly denials: DenialLog;
  /** The gateway the runtime's and the functions' AWS calls go through. */
  readonly enforcement: LocalEnforcement;
  /** A function by name, logical id, or a part of its CDK path (e.g. `/order-consumer/`). */
  findFunction(what: string): LocalFunction;
  /** Batches in flight in any event source, plus running invocations. */
  busy(): number;
  /**
   * Starts one more poller for a mapping (for Kafka: one more member of its consumer group, which
   * makes the group rebalance); `stop()` it to make it leave.
   */
  addEventSource(mapping: LocalEventSourceMapping): Promise<EventSource>;
  /**
   * Stops the triggers (waiting for the batches in flight), the execution environments and the
   * gateways. Resources created on the emulators stay; the emulators keep running.
   */
  stop(): Promise<void>;
}

const EMULATOR_VARS = [
  "AWS_ENDPOINT_URL",
  "AWS_ENDPOINT_URL_DYNAMODB",
  "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
  "AWS_ENDPOINT_URL_KINESIS",
  "AWS_ENDPOINT_URL_SQS",
  "AWS_ENDPOINT_URL_GLUE",
  "AWS_ENDPOINT_URL_SECRETS_MANAGER",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  // Temporary credentials of an account the user points the runtime at (upstreams.ts).
  "AWS_SESSION_TOKEN",
  "KAFKA_BROKERS",
  "KAFKA_IDEMPOTENT",
];

export function matchFunction(fn: LocalFunction, what: string): boolean {
  return fn.name === what || fn.logicalId === what || fn.cdkPath?.includes(what) === true;
}

/** The emulator variables of the run: the options', else this process's. */
function emulatorEnvOf(options: LocalRuntimeOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of EMULATOR_VARS) {
    const v = options.emulatorEnv?.[k] ?? process.env[k];
    if (v !== undefined) env[k] = v;
  }
  return env;
}

/** The one stack to run: the template given, or the assembly's only (or named) stack. */
function stackOf(options: LocalRuntimeOptions): {
  template: CfnTemplate;
  stackName: string;
  assetRoot?: string;
} {
  if (options.template)
    return {
      template: options.template,
      stackName: options.stackName ?? "LocalStack",
      ...(options.assetRoot ? { assetRoot: options.assetRoot } : {}),
    };
  if (!options.cdkOut) throw new Error("give cdkOut or template");
  const stacks = loadCloudAssembly(options.cdkOut);
  const stack = options.stackName ? stacks.find((s) => s.stackName === options.stackName) : stacks[0];
  if (!stack) throw new Error(`no stack ${options.stackName ?? ""} in ${options.cdkOut}`);
  if (!options.stackName && stacks.length > 1)
    throw new Error(
      `${options.cdkOut} has ${stacks.length} stacks; choose one: ${stacks.map((s) => s.stackName).join(", ")}`,
    );
  return stack;
}

interface AwsClients {
  readonly sqs: ReturnType<typeof createSqsClient>;
  readonly ddb: DynamoDBClient;
  readonly streams: DynamoDBStreamsClient;
  /** `undefined` when there is no local Kinesis (no AWS_ENDPOINT_URL_KINESIS). */
  readonly kinesis: KinesisClient | undefined;
}

/** SDK clients on the gateway: the runtime's own (no credentials given), or a role session's. */
function awsClients(
  env: Readonly<Record<string, string>>,
  region: string,
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string } | undefined,
  instrument: LocalRuntimeOptions["instrument"],
): AwsClients {
  const base = { region, ...(credentials ? { credentials } : {}) };
  const at = (endpoint: string | undefined) => (endpoint ? { endpoint } : {});
  const clients = {
    sqs: createSqsClient({ ...base, ...at(env.AWS_ENDPOINT_URL_SQS) }),
    ddb: new DynamoDBClient({ ...base, ...at(env.AWS_ENDPOINT_URL_DYNAMODB) }),
    streams: new DynamoDBStreamsClient({ ...base, ...at(env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS) }),
    kinesis: env.AWS_ENDPOINT_URL_KINESIS
      ? new KinesisClient({ ...base, endpoint: env.AWS_ENDPOINT_URL_KINESIS })
      : undefined,
  };
  for (const c of [clients.sqs, clients.ddb, clients.streams, clients.kinesis]) if (c) instrument?.(c);
  return clients;
}

/** The execution environments: endpoints on the gateway, each function's role session in its environment. */
function functionHost(
  app: LocalApp,
  options: LocalRuntimeOptions,
  emulatorEnv: Record<string, string>,
  enforcement: LocalEnforcement,
): FunctionHost {
  const overrides = options.envOverrides ?? {};
  return new FunctionHost(app.functions, {
    baseEnv: { ...emulatorEnv, ...options.functionEmulatorEnv, ...enforcement.functionEnv },
    envOverrides: (fn) => {
      const merged: Record<string, string> = enforcement.credentialsEnv(fn);
      for (const [what, vars] of Object.entries(overrides))
        if (matchFunction(fn, what)) Object.assign(merged, vars);
      return merged;
    },
    ...(options.logDir ? { logDir: options.logDir } : {}),
    ...(options.logTee ? { logTee: options.logTee } : {}),
    ...(options.maxEnvironmentsPerFunction
      ? { maxEnvironmentsPerFunction: options.maxEnvironmentsPerFunction }
      : {}),
    ...(options.onInvoke ? { onInvoke: options.onInvoke } : {}),
    ...(options.preload ? { preload: options.preload } : {}),
    ...(options.onCrash ? { onCrash: options.onCrash } : {}),
  });
}

/** The gateways for this run; they dial the brokers the way the runtime does (a chaos proxy may stand between). */
function enforcementFor(
  options: LocalRuntimeOptions,
  emulatorEnv: Record<string, string>,
  region: string,
): Promise<LocalEnforcement> {
  const socketFactory = options.kafkaSocketFactory;
  return startLocalEnforcement({
    emulatorEnv,
    ...(options.functionEmulatorEnv ? { functionEmulatorEnv: options.functionEmulatorEnv } : {}),
    enforceIam: options.enforceIam ?? true,
    region,
    ...(socketFactory
      ? {
          kafkaDial: (host, port) =>
            socketFactory({ host, port, onConnect: () => {} } as Parameters<ISocketFactory>[0]),
        }
      : {}),
  });
}

/** The template made local through the gateway (so queue URLs name it). */
function materialiseFor(
  options: LocalRuntimeOptions,
  stack: ReturnType<typeof stackOf>,
  brokers: string[],
  region: string,
  admin: AwsClients,
  enforcement: LocalEnforcement,
): Promise<LocalApp> {
  return materialise({
    template: stack.template,
    stackName: stack.stackName,
    ...(stack.assetRoot ? { assetRoot: stack.assetRoot } : {}),
    kafkaBrokers: brokers,
    ...(enforcement.kafka
      ? {
          // Functions reach Kafka through the gateway, with their MSK IAM auth kept (it has no TLS).
          functionKafkaBrokers: enforcement.kafka.brokers,
          kafkaEnvRewrites: { KAFKA_SSL: "false" },
        }
      : {}),
    region,
    ...(options.namePrefix ? { namePrefix: options.namePrefix } : {}),
    sqs: admin.sqs,
    dynamodb: admin.ddb,
    ...(admin.kinesis ? { kinesis: admin.kinesis } : {}),
  });
}

/**
 * The clients each function's mappings poll with: its role session's, as Lambda's pollers act (the
 * runtime's own when IAM is not enforced), and for Kafka through the gateway with an MSK IAM token.
 */
function mappingIdentities(
  options: LocalRuntimeOptions,
  emulatorEnv: Record<string, string>,
  region: string,
  brokers: string[],
  admin: AwsClients,
  enforcement: LocalEnforcement,
) {
  const roleClients = new Map<string, AwsClients>();
  const roleKafka = new Map<string, Kafka>();
  const kafka = brokers.length
    ? new Kafka({
        clientId: "local-runtime",
        brokers,
        // LOCAL_KAFKA_LOG=info|debug shows the mappings' consumer-group traffic (rebalances, fetches).
        logLevel: kafkaLogLevel(process.env.LOCAL_KAFKA_LOG),
        retry: { retries: 8, initialRetryTime: 200 },
        ...(options.kafkaSocketFactory ? { socketFactory: options.kafkaSocketFactory } : {}),
      })
    : undefined;
  return {
    clientsOf(fn: string): AwsClients {
      const credentials = enforcement.credentials(fn);
      if (!credentials) return admin;
      let c = roleClients.get(fn);
      if (!c) {
        c = awsClients(
          { ...emulatorEnv, ...enforcement.runtimeEnv },
          region,
          credentials,
          options.instrument,
        );
        roleClients.set(fn, c);
      }
      return c;
    },
    kafkaOf(fn: string): Kafka | undefined {
      const credentials = enforcement.credentials(fn);
      if (!kafka || !credentials || !enforcement.kafka) return kafka;
      let k = roleKafka.get(fn);
      if (!k) {
        k = new Kafka({
          clientId: `local-runtime-${fn}`,
          brokers: [...enforcement.kafka.brokers],
          logLevel: kafkaLogLevel(process.env.LOCAL_KAFKA_LOG),
          retry: { retries: 8, initialRetryTime: 200 },
          sasl: mskIamSaslAs(credentials, region),
        });
        roleKafka.set(fn, k);
      }
      return k;
    },
    destroy() {
      for (const c of [admin, ...roleClients.values()]) {
        c.sqs.destroy();
        c.ddb.destroy();
        c.streams.destroy();
        c.kinesis?.destroy();
      }
    },
  };
}

/**
 * The local runtime: materialises a synthesized CDK app (or one template) on the emulators, hosts
 * its functions' bundled code in Lambda-like execution environments, and runs their event source
 * mappings (SQS, DynamoDB Streams, MSK) and schedules with Lambda's semantics. Every AWS call goes
 * through the enforcing gateway (src/enforcement): the functions' and their mappings' as the
 * function's role, the runtime's own as an administrator.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const emulatorEnv = emulatorEnvOf(options);
  const { template, stackName, assetRoot } = stackOf(options);
  const region = emulatorEnv.AWS_REGION ?? "us-east-1";
  const enforcement = await enforcementFor(options, emulatorEnv, region);
  const admin = awsClients(
    { ...emulatorEnv, ...enforcement.runtimeEnv },
    region,
    undefined,
    options.instrument,
  );
  const brokers = (emulatorEnv.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
  let app: LocalApp;
  try {
    app = await materialiseFor(
      options,
      { template, stackName, assetRoot },
      brokers,
      region,
      admin,
      enforcement,
    );
    await enforcement.enforce(app);
    // What Lambda checks of each mapping's role when it creates the mapping: refused, it never polls.
    await refuseUngrantedMappings(app, enforcement);
  } catch (error) {
    await enforcement.stop();
    throw error;
  }
  const host = functionHost(app, options, emulatorEnv, enforcement);
  // Live, in the function's own log stream: the denied call and the grant that would allow it.
  enforcement.denials.subscribe((d) =>
    host.log(d.functionName, `DENIED ${d.action} on ${d.resource}: ${d.message}. Grant it with ${d.advice}`),
  );
  const roles = mappingIdentities(options, emulatorEnv, region, brokers, admin, enforcement);
  const eventSources: EventSource[] = [];
  const clock = options.mappingClock ? { now: options.mappingClock } : {};
  // Each mapping kind is started by the service it reads (services/registry.ts), as its function's role.
  const factories = SERVICES.flatMap((service) => service.eventSources ?? []);
  const sourceFor = (m: LocalEventSourceMapping): EventSource | undefined => {
    const c = roles.clientsOf(m.functionName);
    const kafka = m.kind === "kafka" ? roles.kafkaOf(m.functionName) : undefined;
    // A schema registry (a Kafka mapping's) is read as the function's role, through the gateway.
    const credentials = enforcement.credentials(m.functionName);
    const registryAccess = {
      env: { ...emulatorEnv, ...enforcement.runtimeEnv },
      region,
      ...(credentials ? { credentials } : {}),
    };
    const roleArn = app.access.principals.find((p) => p.functionName === m.functionName)?.roleArn;
    const ctx = {
      host,
      sqs: c.sqs,
      streams: c.streams,
      kinesis: c.kinesis,
      roleArn,
      kafka,
      region,
      clock,
      registryAccess,
    };
    return factories.find((f) => f.kind === m.kind)?.create(m, ctx);
  };
  for (const m of app.mappings) {
    const source = sourceFor(m);
    if (source) eventSources.push(source);
    else
      app.report.unsupported.push({
        logicalId: m.logicalId,
        type: "AWS::Lambda::EventSourceMapping",
        detail:
          m.kind === "kinesis"
            ? "no local Kinesis (AWS_ENDPOINT_URL_KINESIS)"
            : "no local Kafka (KAFKA_BROKERS)",
      });
  }
  eventSources.push(...scheduleSources(app, host, region, options));
  const runtime: LocalRuntime = {
    app,
    host,
    eventSources,
    denials: enforcement.denials,
    enforcement,
    findFunction(what) {
      const fn = app.functions.find((f) => matchFunction(f, what));
      if (!fn) throw new Error(`no local function matches ${what}`);
      return fn;
    },
    busy: () => eventSources.reduce((n, s) => n + s.inFlight(), 0) + host.inFlight(),
    async addEventSource(mapping) {
      const source = sourceFor(mapping);
      if (!source) throw new Error(`${mapping.logicalId}: no local event source`);
      eventSources.push(source);
      await source.start();
      return source;
    },
    async stop() {
      await Promise.allSettled(eventSources.map((s) => s.stop()));
      await host.stop();
      roles.destroy();
      await enforcement.stop();
    },
  };
  if (options.startTriggers !== false) {
    try {
      await startEventSources(eventSources, host);
    } catch (error) {
      await runtime.stop();
      throw error;
    }
  }
  return runtime;
}

/** The app's schedules (EventBridge Scheduler), each an event source of its own. */
function scheduleSources(
  app: LocalApp,
  host: FunctionHost,
  region: string,
  options: LocalRuntimeOptions,
): EventSource[] {
  const timing =
    options.scheduleFirstRunAfterMs !== undefined ? { firstRunAfterMs: options.scheduleFirstRunAfterMs } : {};
  return app.schedules.map((s) => scheduleEventSource(s, host, region, app.accountId, timing));
}

/**
 * Starts every mapping and schedule. A mapping whose role may not read its source is refused, as
 * CreateEventSourceMapping refuses it on AWS: the denial is recorded (with its grant) and written
 * to the function's log, and the other mappings run, so one run lists every missing grant.
 */
async function startEventSources(sources: readonly EventSource[], host: FunctionHost): Promise<void> {
  const started = await Promise.allSettled(sources.map((s) => s.start()));
  for (const [i, r] of started.entries()) {
    if (r.status === "fulfilled") continue;
    const error = r.reason as Error;
    if (!/AccessDenied/.test(error.name)) throw error;
    const m = sources[i]!.mapping;
    for (const fn of m.functionName.split(","))
      host.log(fn, `event source mapping ${m.logicalId} not started: ${error.message}`);
  }
}

/** The materialisation report as text lines (what `npm run local` prints). */
export function formatReport(app: LocalApp): string[] {
  const lines: string[] = [];
  const r = app.report;
  lines.push(`materialised ${r.created.length} resources of ${app.stackName}:`);
  for (const c of r.created) lines.push(`  + ${c.type.padEnd(34)} ${c.detail}`);
  if (r.standIns.length) {
    lines.push(`stand-ins for what the template uses but does not create (${r.standIns.length}):`);
    for (const c of r.standIns) lines.push(`  ≈ ${c.type.padEnd(34)} ${c.detail}`);
  }
  if (r.inert.length) {
    const byReason = new Map<string, string[]>();
    for (const i of r.inert)
      byReason.set(`${i.type}: ${i.detail}`, [
        ...(byReason.get(`${i.type}: ${i.detail}`) ?? []),
        i.logicalId,
      ]);
    lines.push(`no local effect (${r.inert.length}):`);
    for (const [reason, ids] of byReason) lines.push(`  ~ ${reason} (${ids.length})`);
  }
  if (r.unsupported.length) {
    lines.push(`NOT EMULATED (${r.unsupported.length}):`);
    for (const u of r.unsupported) lines.push(`  ! ${u.logicalId} ${u.type}: ${u.detail}`);
  }
  if (r.refused.length) {
    lines.push(`REFUSED, as AWS refuses it (${r.refused.length}):`);
    for (const u of r.refused) lines.push(`  ! ${u.logicalId} ${u.type}: ${u.detail}`);
  }
  if (r.notes.length) {
    lines.push("notes:");
    for (const n of r.notes) lines.push(`  - ${n}`);
  }
  return lines;
}

/** SASL OAUTHBEARER with an MSK IAM token signed with a role session's credentials. */
function mskIamSaslAs(
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string },
  region: string,
): SASLOptions {
  return {
    mechanism: "oauthbearer",
    oauthBearerProvider: async () => ({
      value: (
        await generateAuthTokenFromCredentialsProvider({
          region,
          awsCredentialsProvider: async () => credentials,
        })
      ).token,
    }),
  };
}

function kafkaLogLevel(name: string | undefined): logLevel {
  switch (name?.toLowerCase()) {
    case "debug":
      return logLevel.DEBUG;
    case "info":
      return logLevel.INFO;
    case "warn":
      return logLevel.WARN;
    case "error":
      return logLevel.ERROR;
    default:
      return logLevel.NOTHING;
  }
}
