import type { App } from "aws-cdk-lib";

/**
 * Context values of the app (`cdk.json`, or `-c key=value`). Every one has an offline default, so
 * `cdk synth` runs without AWS credentials and without lookups; replace them to deploy.
 */
export interface InfraContext {
  /** Reference an existing MSK cluster (default) or create one (`createMskCluster=true`). */
  readonly createMskCluster: boolean;
  readonly mskClusterArn: string;
  /** `provisioned` (topics as AWS::MSK::Topic, Kafka ≥ 3.6) or `serverless` (topics via custom resource). */
  readonly mskClusterKind: "provisioned" | "serverless";
  /** SASL/IAM bootstrap brokers, comma-separated (`aws kafka get-bootstrap-brokers`). */
  readonly mskBootstrapBrokers: string;
  readonly mskIamAuth: boolean;
  readonly vpcId: string;
  readonly availabilityZones: string[];
  readonly privateSubnetIds: string[];
  /** A security group that the brokers accept on 9098 and that functions in the VPC use. */
  readonly mskSecurityGroupId: string;
  /** Alarm notifications. @default - none */
  readonly alarmTopicArn: string | undefined;
  /** Deploy a failing stub for reference functions whose handler file is missing (with a synth warning). */
  readonly allowMissingHandlers: boolean;
  readonly metricsNamespace: string;
}

export const CONTEXT_DEFAULTS: InfraContext = {
  createMskCluster: false,
  mskClusterArn:
    "arn:aws:kafka:us-east-1:111111111111:cluster/reference-cluster/11111111-2222-3333-4444-555555555555-1",
  mskClusterKind: "provisioned",
  mskBootstrapBrokers:
    "b-1.referencecluster.abc123.c1.kafka.us-east-1.amazonaws.com:9098," +
    "b-2.referencecluster.abc123.c1.kafka.us-east-1.amazonaws.com:9098",
  mskIamAuth: true,
  vpcId: "vpc-0123456789abcdef0",
  availabilityZones: ["us-east-1a", "us-east-1b"],
  privateSubnetIds: ["subnet-0123456789abcdef1", "subnet-0123456789abcdef2"],
  mskSecurityGroupId: "sg-0123456789abcdef0",
  alarmTopicArn: undefined,
  allowMissingHandlers: false,
  metricsNamespace: "ReliableConsumers",
};

const bool = (v: unknown, fallback: boolean): boolean =>
  v === undefined
    ? fallback
    : v === true || v === "true"
      ? true
      : v === false || v === "false"
        ? false
        : fallback;

const list = (v: unknown, fallback: string[]): string[] =>
  v === undefined
    ? fallback
    : Array.isArray(v)
      ? v.map(String)
      : String(v)
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);

export function readContext(app: Pick<App, "node">): InfraContext {
  const get = (key: string): unknown => app.node.tryGetContext(key);
  const kind = String(get("mskClusterKind") ?? CONTEXT_DEFAULTS.mskClusterKind);
  if (kind !== "provisioned" && kind !== "serverless") {
    throw new Error(`context mskClusterKind must be "provisioned" or "serverless", got "${kind}"`);
  }
  const str = (key: keyof InfraContext): string => String(get(key) ?? CONTEXT_DEFAULTS[key]);
  const alarmTopicArn = get("alarmTopicArn");
  return {
    createMskCluster: bool(get("createMskCluster"), CONTEXT_DEFAULTS.createMskCluster),
    mskClusterArn: str("mskClusterArn"),
    mskClusterKind: kind,
    mskBootstrapBrokers: str("mskBootstrapBrokers"),
    mskIamAuth: bool(get("mskIamAuth"), CONTEXT_DEFAULTS.mskIamAuth),
    vpcId: str("vpcId"),
    availabilityZones: list(get("availabilityZones"), CONTEXT_DEFAULTS.availabilityZones),
    privateSubnetIds: list(get("privateSubnetIds"), CONTEXT_DEFAULTS.privateSubnetIds),
    mskSecurityGroupId: str("mskSecurityGroupId"),
    alarmTopicArn: alarmTopicArn ? String(alarmTopicArn) : undefined,
    allowMissingHandlers: bool(get("allowMissingHandlers"), CONTEXT_DEFAULTS.allowMissingHandlers),
    metricsNamespace: str("metricsNamespace"),
  };
}
