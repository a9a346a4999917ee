import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import { consumerEnvironment } from "./consumerFunction.ts";
import { ConsumerFunctionBase, type ConsumerOptions } from "./consumerFunctionBase.ts";
import { FUNCTION_ARCHITECTURE, FUNCTION_RUNTIME } from "./functionDefaults.ts";
import { PREBUILT_HANDLER, type PrebuiltHandlerName, prebuiltHandlerCode } from "./prebuiltHandlers.ts";

/** Props of `PrebuiltFunction`. */
export interface PrebuiltFunctionProps extends lambda.FunctionOptions, ConsumerOptions {
  /** Which of the library's handlers: `outboxRelay`, `outboxSweeper` or `kafkaTopics`. */
  readonly prebuilt: PrebuiltHandlerName;
  /** The function timeout (1 s–15 min). @default Duration.minutes(1) */
  readonly timeout?: Duration;
  /** Memory in MiB (128–10,240). @default 512 */
  readonly memorySize?: number;
  /** The Powertools metrics namespace (`POWERTOOLS_METRICS_NAMESPACE`). @default "ReliableConsumers" */
  readonly metricsNamespace?: string;
  /**
   * Retention of the log group the construct creates (unless `logGroup` is given).
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /** The execution role. @default - a role of its own: no managed policies, logs scoped to its log group */
  readonly role?: iam.IRole;
  /** The log group the function writes to. @default - a log group of its own, with `logRetention` */
  readonly logGroup?: logs.ILogGroup;
}

/**
 * One of the library's own handlers (the outbox relay and sweeper, the Kafka-topics custom
 * resource), deployed from the package's built bundle: no entry, no bundling in the user's app.
 * Node 24 on arm64, its own least-privilege role and log group, and the consumer trigger methods.
 */
export class PrebuiltFunction extends ConsumerFunctionBase {
  /** The Lambda function, running the prebuilt bundle. */
  readonly function: lambda.Function;
  /** The function's execution role: `props.role`, or one of its own. */
  readonly role: iam.IRole;
  /** The function's log group: `props.logGroup`, or one of its own. */
  readonly logGroup: logs.ILogGroup;
  /** The consumer's name: its dedup scope and `POWERTOOLS_SERVICE_NAME`. */
  readonly consumerName: string;
  /** The function's timeout (`props.timeout`, else 1 minute). */
  readonly timeout: Duration;

  /** Creates the function from the prebuilt bundle `props.prebuilt`, with its role and log group. */
  constructor(scope: Construct, id: string, props: PrebuiltFunctionProps) {
    super(scope, id);
    this.consumerName = props.consumerName ?? id;
    this.timeout = props.timeout ?? Duration.minutes(1);
    const { prebuilt, consumerName, metricsNamespace, logRetention, environment, ...functionProps } = props;
    this.logGroup =
      props.logGroup ??
      new logs.LogGroup(this, "Logs", {
        retention: logRetention ?? logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      });
    this.role =
      props.role ??
      new iam.Role(this, "Role", {
        assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
        description: `Execution role of ${this.consumerName}`,
      });
    this.logGroup.grantWrite(this.role);
    this.function = new lambda.Function(this, "Function", {
      ...functionProps,
      code: prebuiltHandlerCode(prebuilt),
      handler: PREBUILT_HANDLER,
      runtime: FUNCTION_RUNTIME,
      architecture: FUNCTION_ARCHITECTURE,
      timeout: this.timeout,
      memorySize: props.memorySize ?? 512,
      role: this.role,
      logGroup: this.logGroup,
      environment: consumerEnvironment(this.consumerName, metricsNamespace, environment),
    });
    if (props.vpc) this.grantNetworking();
  }
}
