import { Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import {
  type BundlingOptions,
  NodejsFunction,
  type NodejsFunctionProps,
} from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import { LAMBDA_ENV } from "../env.ts";
import { ConsumerFunctionBase, type ConsumerOptions } from "./consumerFunctionBase.ts";
import { assertEntryExists, BUNDLING, FUNCTION_ARCHITECTURE, FUNCTION_RUNTIME } from "./functionDefaults.ts";

/**
 * A consumer's `NodejsFunction`: every `NodejsFunctionProps` prop (`projectRoot`,
 * `depsLockFilePath`, `bundling`, `runtime`, `architecture`, ...) with NodejsFunction's own
 * defaults, found from the user's app (the lock file above the working directory), and these
 * defaults of the library where NodejsFunction has none: Node 24 on arm64, ESM, minified, source
 * maps (`BUNDLING`, merged under `bundling`), a 30 s timeout, 512 MB, its own least-privilege role
 * and log group.
 */
export interface ConsumerFunctionProps extends NodejsFunctionProps, ConsumerOptions {
  /** Path of the handler file, e.g. `src/orderConsumer.ts`. It must exist at synth. */
  readonly entry: string;
  /** The exported handler's name. @default "handler" */
  readonly handler?: string;
  /**
   * The function timeout (1 s–15 min). An SQS trigger's queue must allow for it (6 × this +
   * batching window, unless the queue is sized for the visibility heartbeat).
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
  /** Memory in MiB (128–10,240). @default 512 */
  readonly memorySize?: number;
  /** The Lambda runtime. @default FUNCTION_RUNTIME (Node.js 24) */
  readonly runtime?: lambda.Runtime;
  /** The instruction set. @default FUNCTION_ARCHITECTURE (arm64) */
  readonly architecture?: lambda.Architecture;
  /** Merged over the library's `BUNDLING` (ESM, minified, source maps, the SDK bundled). @default BUNDLING */
  readonly bundling?: BundlingOptions;
  /** The Powertools metrics namespace (`POWERTOOLS_METRICS_NAMESPACE`). @default "ReliableConsumers" */
  readonly metricsNamespace?: string;
  /**
   * Retention of the log group the construct creates (unless `logGroup` is given). AWS Control
   * Tower's CT.CLOUDWATCH.PR.2 asks for at least `RetentionDays.ONE_YEAR`.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * A KMS key for the log group the construct creates (AWS Control Tower's CT.CLOUDWATCH.PR.3). A
   * key defined in the same app is granted to the CloudWatch Logs service principal of the stack's
   * region; for an imported key, its key policy must allow `logs.<region>.amazonaws.com`.
   * @default - CloudWatch Logs' own encryption at rest
   */
  readonly logEncryptionKey?: kms.IKey;
  /** The execution role. @default - a role of its own: no managed policies, logs scoped to its log group */
  readonly role?: iam.IRole;
  /** The log group the function writes to. @default - a log group of its own, with `logRetention` */
  readonly logGroup?: logs.ILogGroup;
}

const DEFAULT_TIMEOUT = Duration.seconds(30);

/** A function built some other way, under the consumer rules (see `ConsumerFunction.fromFunction`). */
class WrappedConsumerFunction extends ConsumerFunctionBase {
  readonly function: lambda.Function;
  readonly consumerName: string;
  readonly timeout: Duration;

  constructor(scope: Construct, id: string, fn: lambda.Function, options: ConsumerOptions) {
    super(scope, id);
    this.function = fn;
    this.consumerName = options.consumerName ?? id;
    // Lambda's own default when the function sets none.
    this.timeout = fn.timeout ?? Duration.seconds(3);
  }
}

/**
 * A message consumer: a `NodejsFunction` (esbuild, Node 24, arm64, ESM, minified, source maps) with
 * its own least-privilege role and log group, and the trigger methods of `ConsumerFunctionBase`.
 */
export class ConsumerFunction extends ConsumerFunctionBase {
  /**
   * The consumer rules and trigger methods for a function built another way (a `lambda.Function`,
   * a `NodejsFunction` of your own, ...): `addSqsTrigger` checks the visibility rule against its
   * timeout, `useDedupWindow` the dedup window against its triggers' retry paths. Its role,
   * bundling and log group stay yours.
   */
  static fromFunction(
    scope: Construct,
    id: string,
    fn: lambda.Function,
    options: ConsumerOptions = {},
  ): ConsumerFunctionBase {
    return new WrappedConsumerFunction(scope, id, fn, options);
  }

  /** The bundled Lambda function. */
  readonly function: NodejsFunction;
  /** The function's execution role: `props.role`, or one of its own. */
  readonly role: iam.IRole;
  /** The function's log group: `props.logGroup`, or one of its own. */
  readonly logGroup: logs.ILogGroup;
  /** The consumer's name: its dedup scope and `POWERTOOLS_SERVICE_NAME`. */
  readonly consumerName: string;
  /** The function's timeout, which the visibility rule is checked against. */
  readonly timeout: Duration;

  /**
   * Bundles `props.entry` into a function with its role and log group; throws if the entry is missing or does
   * not bundle.
   */
  constructor(scope: Construct, id: string, props: ConsumerFunctionProps) {
    super(scope, id);
    assertEntryExists(props.entry, this.node.path);
    this.consumerName = props.consumerName ?? id;
    this.timeout = props.timeout ?? DEFAULT_TIMEOUT;
    const {
      consumerName,
      metricsNamespace,
      logRetention,
      logEncryptionKey,
      environment,
      bundling,
      ...functionProps
    } = props;

    this.logGroup =
      props.logGroup ??
      new logs.LogGroup(this, "Logs", {
        retention: logRetention ?? logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
        ...(logEncryptionKey ? { encryptionKey: logEncryptionKey } : {}),
      });
    // CloudWatch Logs encrypts with the key as its regional service principal (no-op for an imported key).
    logEncryptionKey?.grantEncryptDecrypt(
      new iam.ServicePrincipal(`logs.${Stack.of(this).region}.amazonaws.com`),
    );
    // An explicit role: no AWS managed policies, logs scoped to this function's log group.
    this.role =
      props.role ??
      new iam.Role(this, "Role", {
        assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
        description: `Execution role of ${this.consumerName}`,
      });
    this.logGroup.grantWrite(this.role);

    this.function = bundled(
      props.entry,
      this.node.path,
      () =>
        new NodejsFunction(this, "Function", {
          ...functionProps,
          handler: props.handler ?? "handler",
          runtime: props.runtime ?? FUNCTION_RUNTIME,
          architecture: props.architecture ?? FUNCTION_ARCHITECTURE,
          timeout: this.timeout,
          memorySize: props.memorySize ?? 512,
          role: this.role,
          logGroup: this.logGroup,
          // projectRoot and depsLockFilePath: NodejsFunction's defaults (the user's lock file) unless given.
          bundling: { ...BUNDLING, ...bundling },
          environment: consumerEnvironment(this.consumerName, metricsNamespace, environment),
        }),
    );
    if (props.vpc) this.grantNetworking();
  }
}

/** A handler that esbuild could not bundle: names the entry and the construct, with esbuild's error. */
export class ConsumerBundlingError extends Error {
  /** The literal class name, which survives minification. */
  override readonly name = "ConsumerBundlingError";
}

/**
 * NodejsFunction bundles while it is constructed and fails with the asset's path only; this names
 * the entry too. esbuild's own messages (the file, line and what it could not resolve) are on
 * stderr above, and in the cause.
 */
function bundled<T>(entry: string, path: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    if (!/bundl/i.test(message)) throw error;
    throw new ConsumerBundlingError(`${path}: esbuild could not bundle the handler ${entry}: ${message}`, {
      cause: error,
    });
  }
}

/** The variables every consumer gets: source maps on, the Powertools service name and namespace. */
export function consumerEnvironment(
  consumerName: string,
  metricsNamespace = "ReliableConsumers",
  environment: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    NODE_OPTIONS: "--enable-source-maps",
    [LAMBDA_ENV.powertoolsServiceName]: consumerName,
    [LAMBDA_ENV.consumerName]: consumerName,
    [LAMBDA_ENV.powertoolsMetricsNamespace]: metricsNamespace,
    ...environment,
  };
}
