/**
 * The local runtime's enforcement, put together: the AWS gateway in front of the emulators, the
 * denial log, and each function's identity (its role session's credentials in its environment,
 * and for the clients its event source mappings poll with). With `enforceIam: false` the gateway
 * still serves the queue URLs and checks the quotas; every caller is then allowed.
 */
import type { Socket } from "node:net";
import type { LocalApp, LocalFunction } from "../runtime/model.ts";
import type { FunctionPrincipal } from "../services/iam/accessModel.ts";
import { createIamEvaluator, type IamEvaluator } from "../services/iam/iamEvaluator.ts";
import { type KafkaGateway, startKafkaGateway } from "../services/kafka/enforcement/gateway.ts";
import { type AwsGateway, type GatewayUpstreams, startAwsGateway } from "./awsGateway.ts";
import { createDenialLog, type DenialLog } from "./denials.ts";

export interface LocalEnforcementOptions {
  /** The emulator variables (AWS_ENDPOINT_URL_*). */
  readonly emulatorEnv: Readonly<Record<string, string>>;
  /** Endpoints for the functions' own calls, behind the checks (a fault proxy). */
  readonly functionEmulatorEnv?: Readonly<Record<string, string>>;
  /** Evaluate each function's IAM policies on its calls. @default true */
  readonly enforceIam?: boolean;
  readonly region: string;
  readonly accountId?: string;
  readonly now?: () => number;
  /** How the Kafka gateway reaches a broker (a chaos redirect). @default net.connect */
  readonly kafkaDial?: (host: string, port: number) => Socket;
}

/** The running gateways of one local runtime and the identities they enforce. */
export interface LocalEnforcement {
  readonly enforceIam: boolean;
  readonly gateway: AwsGateway;
  /** The Kafka gateway, when there is a local Kafka (KAFKA_BROKERS). */
  readonly kafka: KafkaGateway | undefined;
  readonly denials: DenialLog;
  /** Endpoint variables for the runtime's own clients. */
  readonly runtimeEnv: Readonly<Record<string, string>>;
  /** Endpoint variables every function gets. */
  readonly functionEnv: Readonly<Record<string, string>>;
  /** Starts enforcing the materialised app's policies (before any function runs). */
  enforce(app: LocalApp): Promise<void>;
  /** The function's identity, once enforcing. */
  principal(functionName: string): FunctionPrincipal | undefined;
  /** Its role session's credentials as variables (what Lambda puts in the environment). */
  credentialsEnv(fn: LocalFunction): Record<string, string>;
  /** Its role session's credentials for an SDK client (its mappings' pollers). */
  credentials(functionName: string): SessionCredentials | undefined;
  /** The evaluator, once enforcing (the Kafka gateway and the schedules ask it too). */
  evaluator(): IamEvaluator | undefined;
  stop(): Promise<void>;
}

/** Static SDK credentials (a role session's). */
export interface SessionCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
}

const ENDPOINT_VARS: ReadonlyArray<[variable: string, service: keyof GatewayUpstreams]> = [
  ["AWS_ENDPOINT_URL_SQS", "sqs"],
  ["AWS_ENDPOINT_URL_DYNAMODB", "dynamodb"],
  ["AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "streams"],
  ["AWS_ENDPOINT_URL_KINESIS", "kinesis"],
  ["AWS_ENDPOINT_URL_GLUE", "glue"],
  ["AWS_ENDPOINT_URL_SECRETS_MANAGER", "secretsmanager"],
];

function upstreamsOf(env: Readonly<Record<string, string>> | undefined): GatewayUpstreams {
  const out: Record<string, string> = {};
  for (const [variable, service] of ENDPOINT_VARS) {
    const url = env?.[variable] ?? env?.AWS_ENDPOINT_URL;
    if (url) out[service] = url;
  }
  return out;
}

/** The endpoint variables that point each emulated service at `endpoint`. */
function endpointEnv(upstreams: GatewayUpstreams, endpoint: string): Record<string, string> {
  return Object.fromEntries(
    ENDPOINT_VARS.filter(([, service]) => upstreams[service]).map(([variable]) => [variable, endpoint]),
  );
}

export async function startLocalEnforcement(options: LocalEnforcementOptions): Promise<LocalEnforcement> {
  const denials = createDenialLog();
  const upstreams = upstreamsOf(options.emulatorEnv);
  const functionUpstreams = options.functionEmulatorEnv ? upstreamsOf(options.functionEmulatorEnv) : {};
  const gateway = await startAwsGateway({
    upstreams,
    functionUpstreams,
    region: options.region,
    accountId: options.accountId ?? "000000000000",
    denials,
    ...(options.now ? { now: options.now } : {}),
  });
  const enforceIam = options.enforceIam ?? true;
  let principals = new Map<string, FunctionPrincipal>();
  let byKey = new Map<string, FunctionPrincipal>();
  let evaluator: IamEvaluator | undefined;
  let app: LocalApp | undefined;
  let clusterArn = UNKNOWN_CLUSTER;
  const brokers = (options.emulatorEnv.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
  const kafka = brokers.length
    ? await startKafkaGateway({
        upstream: brokers,
        clusterArn: () => clusterArn,
        denials,
        principalOf: (key) => byKey.get(key),
        evaluator: () => evaluator,
        ...(options.kafkaDial ? { dial: options.kafkaDial } : {}),
        constructPaths: () => app?.access.constructPaths ?? new Map(),
      })
    : undefined;
  return {
    enforceIam,
    gateway,
    kafka,
    denials,
    runtimeEnv: endpointEnv(upstreams, gateway.endpoint),
    functionEnv: {
      ...endpointEnv({ ...upstreams, ...functionUpstreams }, gateway.functionEndpoint),
      ...(kafka ? { KAFKA_BROKERS: kafka.brokers.join(",") } : {}),
    },
    async enforce(materialised) {
      app = materialised;
      clusterArn = mskClusterOf(materialised);
      if (!enforceIam) return;
      evaluator = await createIamEvaluator(materialised.access);
      principals = new Map(materialised.access.principals.map((p) => [p.functionName, p]));
      byKey = new Map(materialised.access.principals.map((p) => [p.credentials.accessKeyId, p]));
      const tables = new Map(materialised.tables.map((t) => [t.name, t.arn]));
      // DynamoDB Local names its region `ddblocal` in ARNs; the template's grants resolve to those.
      const tablePrefix =
        materialised.tables[0]?.arn.replace(/table\/.*$/, "table/") ??
        `arn:aws:dynamodb:${materialised.region}:${materialised.accountId}:table/`;
      gateway.enforce(materialised.access, evaluator, {
        tableArn: (name) => tables.get(name) ?? `${tablePrefix}${name}`,
      });
    },
    principal: (name) => principals.get(name),
    credentialsEnv(fn): Record<string, string> {
      const c = principals.get(fn.name)?.credentials;
      return c
        ? {
            AWS_ACCESS_KEY_ID: c.accessKeyId,
            AWS_SECRET_ACCESS_KEY: c.secretAccessKey,
            AWS_SESSION_TOKEN: c.sessionToken,
          }
        : {};
    },
    credentials(name) {
      const c = principals.get(name)?.credentials;
      return c
        ? { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, sessionToken: c.sessionToken }
        : undefined;
    },
    evaluator: () => evaluator,
    async stop() {
      await Promise.all([gateway.stop(), kafka?.stop()]);
    },
  };
}

const UNKNOWN_CLUSTER = "arn:aws:kafka:us-east-1:000000000000:cluster/local/local";

/**
 * The MSK cluster the local Kafka stands in for: the one the app's Kafka mappings read, else the
 * one its policies connect to. (An app with several clusters is checked against the first.)
 */
function mskClusterOf(app: LocalApp): string {
  for (const m of app.mappings)
    if (m.kind === "kafka" && m.clusterArn.startsWith("arn:")) return m.clusterArn;
  for (const p of app.access.principals)
    for (const policy of p.policies)
      for (const st of [policy.document.Statement].flat() as Array<{
        Action?: unknown;
        Resource?: unknown;
      }>) {
        const actions = [st.Action ?? []].flat().map(String);
        if (!actions.some((a) => a === "kafka-cluster:Connect" || a === "kafka-cluster:*")) continue;
        const resource = [st.Resource ?? []]
          .flat()
          .map(String)
          .find((r) => r.includes(":cluster/"));
        if (resource) return resource;
      }
  return UNKNOWN_CLUSTER;
}
