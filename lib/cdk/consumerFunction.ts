import { Duration, RemovalPolicy, Validations } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { KafkaDlq, SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import {
  type BundlingOptions,
  NodejsFunction,
  type NodejsFunctionProps,
} from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { LAMBDA_ENV } from "./env.ts";
import { assertEntryExists, BUNDLING, FUNCTION_ARCHITECTURE, FUNCTION_RUNTIME } from "./functionDefaults.ts";
import { type MskClusterRef, MskGrants } from "./mskCluster.ts";
import type { QueueWithDlq } from "./queueWithDlq.ts";
import {
  ladderRetryPathSeconds,
  ladderRuntimeConfig,
  ladderTopics,
  type RetryLadderDeclaration,
} from "./retryLadder.ts";
import { ConsumerRuleError, checkVisibilityTimeout, formatSeconds, type RetryPath } from "./rules.ts";

/** Anything that remembers dedup keys for a window: the dedup table, or the app table's inbox. */
export interface DedupWindowOwner {
  readonly window: Duration;
  addRetryPath(path: () => RetryPath): void;
}

/** What makes a function a consumer, whoever built the function. */
export interface ConsumerOptions {
  /** The consumer's name: its dedup scope and `POWERTOOLS_SERVICE_NAME`. @default the construct id */
  readonly consumerName?: string;
}

/**
 * A consumer's `NodejsFunction`: every `NodejsFunctionProps` prop (`projectRoot`,
 * `depsLockFilePath`, `bundling`, `runtime`, `architecture`, ...) with NodejsFunction's own
 * defaults, found from the user's app (the lock file above the working directory), and these
 * defaults of the library where NodejsFunction has none: Node 24 on arm64, ESM, minified, source
 * maps (`BUNDLING`, merged under `bundling`), a 30 s timeout, 512 MB, its own least-privilege role
 * and log group.
 */
export interface ConsumerFunctionProps extends NodejsFunctionProps, ConsumerOptions {
  /** Path of the handler file, e.g. `src/orderConsumer.ts`. */
  readonly entry: string;
  /** @default "handler" */
  readonly handler?: string;
  /** @default Duration.seconds(30) */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default FUNCTION_RUNTIME (Node.js 24) */
  readonly runtime?: lambda.Runtime;
  /** @default FUNCTION_ARCHITECTURE (arm64) */
  readonly architecture?: lambda.Architecture;
  /** Merged over the library's `BUNDLING` (ESM, minified, source maps, the SDK bundled). @default BUNDLING */
  readonly bundling?: BundlingOptions;
  /** @default "ReliableConsumers" */
  readonly metricsNamespace?: string;
  /** Retention of the log group the construct creates (unless `logGroup` is given). @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** @default - a role of its own: no managed policies, logs scoped to its log group */
  readonly role?: iam.IRole;
  /** @default - a log group of its own, with `logRetention` */
  readonly logGroup?: logs.ILogGroup;
}

export interface SqsTriggerOptions {
  /** @default 10 */
  readonly batchSize?: number;
  /** @default Duration.seconds(0) */
  readonly maxBatchingWindow?: Duration;
  /** Concurrent invocations this trigger may use (2–1000). @default 5 */
  readonly maxConcurrency?: number;
  /** Also export the queue URL under this variable, e.g. `ORDERS_QUEUE_URL`. @default - none */
  readonly queueUrlEnv?: string;
  /** Also export the DLQ URL under this variable, besides `DLQ_URL`. @default - none */
  readonly dlqUrlEnv?: string;
}

export interface MskTriggerOptions {
  /** Consumer group of the main topic; retry topics use `<group>.<retry suffix>`. @default the consumer name */
  readonly consumerGroupId?: string;
  /** @default 100 */
  readonly batchSize?: number;
  /** @default Duration.seconds(1) */
  readonly maxBatchingWindow?: Duration;
  /** @default lambda.StartingPosition.TRIM_HORIZON */
  readonly startingPosition?: lambda.StartingPosition;
  /**
   * Provisioned pollers. Provisioned mode is what makes ReportBatchItemFailures, bisect, retry
   * limits and the Kafka on-failure destination available to an MSK trigger.
   * @default { minimumPollers: 1, maximumPollers: 2 }
   */
  readonly pollers?: { readonly minimumPollers: number; readonly maximumPollers: number };
  /**
   * Whole-invocation retries on the main topic (function crash or timeout), after which Lambda
   * sends the batch to the `.DLQ` topic. Record failures go through the retry ladder instead.
   * Retry-topic mappings always retry without limit and have no on-failure destination: the
   * consumer hands back records that are not due yet, and those must wait, not be dead-lettered.
   * @default 2
   */
  readonly retryAttempts?: number;
  /** @default true */
  readonly bisectBatchOnError?: boolean;
}

interface TriggerPath {
  readonly description: string;
  readonly seconds: number;
}

const DEFAULT_TIMEOUT = Duration.seconds(30);

/**
 * A consumer: a Lambda function with trigger methods that encode the library's rules:
 * ReportBatchItemFailures always on, the SQS visibility rule checked, the dedup window checked
 * against every trigger's retry path. `ConsumerFunction` builds the function from an entry;
 * `ConsumerFunction.fromFunction` applies the same rules to a function built any other way, and
 * `PrebuiltFunction` deploys the library's own handlers.
 */
export abstract class ConsumerFunctionBase extends Construct {
  abstract readonly function: lambda.Function;
  abstract readonly consumerName: string;
  /** The function's timeout, which the visibility rule is checked against. */
  abstract readonly timeout: Duration;
  private readonly triggerPaths: TriggerPath[] = [];
  private networkingGranted = false;
  private readonly wildcardReasons: string[] = [];

  private get inVpc(): boolean {
    return this.function.isBoundToVpc;
  }

  addEnvironment(name: string, value: string): this {
    this.function.addEnvironment(name, value);
    return this;
  }

  /**
   * Consume an SQS queue: ReportBatchItemFailures, batch size and window, maximum concurrency.
   * Fails synth unless the queue's visibility timeout ≥ 6 × this function's timeout + the window.
   * Permanent failures are parked in the queue's DLQ at once (`DLQ_URL`).
   */
  addSqsTrigger(q: QueueWithDlq, options: SqsTriggerOptions = {}): SqsEventSource {
    const window = options.maxBatchingWindow ?? Duration.seconds(0);
    const batchSize = options.batchSize ?? 10;
    if (q.fifo && batchSize > 10) {
      throw new ConsumerRuleError(
        `${this.node.path}: a FIFO queue trigger takes batches of at most 10, got ${batchSize}`,
      );
    }
    if (q.fifo && window.toSeconds() > 0) {
      throw new ConsumerRuleError(`${this.node.path}: FIFO queue triggers do not support a batching window`);
    }
    if (batchSize > 10 && window.toSeconds() === 0) {
      throw new ConsumerRuleError(
        `${this.node.path}: a batch size above 10 needs a maxBatchingWindow of at least 1 second`,
      );
    }
    checkVisibilityTimeout({
      queue: q.node.path,
      visibilityTimeoutSeconds: q.visibilityTimeout.toSeconds(),
      consumer: this.consumerName,
      functionTimeoutSeconds: this.timeout.toSeconds(),
      batchingWindowSeconds: window.toSeconds(),
    });
    const source = new SqsEventSource(q.queue, {
      batchSize,
      ...(window.toSeconds() > 0 ? { maxBatchingWindow: window } : {}),
      reportBatchItemFailures: true,
      maxConcurrency: options.maxConcurrency ?? 5,
    });
    this.function.addEventSource(source);
    q.grantSendToDeadLetterQueue(this.function);
    this.addEnvironment(LAMBDA_ENV.dlqUrl, q.deadLetterQueue.queueUrl);
    if (options.queueUrlEnv) this.addEnvironment(options.queueUrlEnv, q.queue.queueUrl);
    if (options.dlqUrlEnv) this.addEnvironment(options.dlqUrlEnv, q.deadLetterQueue.queueUrl);
    this.triggerPaths.push({ description: q.retryPathDescription, seconds: q.retryPathSeconds });
    return source;
  }

  /**
   * Consume a Kafka topic on MSK with its retry ladder: one event source mapping for the main topic
   * and one for each retry topic (each with its own consumer group), all in provisioned mode with
   * ReportBatchItemFailures, bisect, a retry limit, and the ladder's dead-letter topic as the
   * on-failure destination. Grants read on the consumed topics, write on the retry and dead-letter
   * topics, and exports `KAFKA_BROKERS`, `KAFKA_TOPIC`, `KAFKA_RETRY_LADDER`, `MSK_IAM_AUTH`.
   */
  addMskTrigger(
    cluster: MskClusterRef,
    ladder: RetryLadderDeclaration,
    options: MskTriggerOptions = {},
  ): lambda.EventSourceMapping[] {
    if (!this.inVpc) {
      throw new ConsumerRuleError(
        `${this.node.path}: an MSK consumer must run in the cluster's VPC (give vpc, vpcSubnets and securityGroups) ` +
          `to publish to its retry and dead-letter topics.`,
      );
    }
    const topics = ladderTopics(ladder);
    const consumed = topics.filter((t) => t.role !== "dead-letter");
    const deadLetter = topics.find((t) => t.role === "dead-letter")!;
    const group = options.consumerGroupId ?? this.consumerName;
    const groupOf = (topic: string) =>
      topic === ladder.topic ? group : `${group}${topic.slice(ladder.topic.length)}`;
    const pollers = options.pollers ?? { minimumPollers: 1, maximumPollers: 2 };

    const mappings = consumed.map(
      (t) =>
        new lambda.EventSourceMapping(this, `Msk-${t.name}`, {
          target: this.function,
          eventSourceArn: cluster.clusterArn,
          kafkaTopic: t.name,
          kafkaConsumerGroupId: groupOf(t.name),
          startingPosition: options.startingPosition ?? lambda.StartingPosition.TRIM_HORIZON,
          batchSize: options.batchSize ?? 100,
          maxBatchingWindow: options.maxBatchingWindow ?? Duration.seconds(1),
          provisionedPollerConfig: pollers,
          reportBatchItemFailures: true,
          ...(t.role === "main"
            ? {
                bisectBatchOnError: options.bisectBatchOnError ?? true,
                retryAttempts: options.retryAttempts ?? 2,
                onFailure: new KafkaDlq(deadLetter.name),
              }
            : // -1: until the record is due and done. (With an on-failure destination Lambda caps retries at 10.)
              { retryAttempts: -1 }),
        }),
    );
    MskGrants.eventSourceMapping(this.function, cluster);
    MskGrants.consume(
      this.function,
      this,
      cluster,
      consumed.map((t) => t.name),
      consumed.map((t) => groupOf(t.name)),
    );
    MskGrants.produce(
      this.function,
      this,
      cluster,
      topics.filter((t) => t.role !== "main").map((t) => t.name),
    );
    this.addEnvironment(LAMBDA_ENV.kafkaBrokers, cluster.bootstrapBrokers)
      .addEnvironment(LAMBDA_ENV.kafkaTopic, ladder.topic)
      .addEnvironment(LAMBDA_ENV.kafkaRetryLadder, JSON.stringify(ladderRuntimeConfig(ladder)))
      .addEnvironment(LAMBDA_ENV.mskIamAuth, String(cluster.iamAuth ?? true));
    this.triggerPaths.push({
      description:
        `topic ${ladder.topic}: retry ladder ${ladder.retryDelaysSeconds.map((s) => formatSeconds(s)).join(" → ")} ` +
        `+ the longest topic retention` +
        (ladder.plannedReplaySeconds
          ? ` + planned replay ${formatSeconds(ladder.plannedReplaySeconds)}`
          : ""),
      seconds: ladderRetryPathSeconds(ladder),
    });
    return mappings;
  }

  /** Produce to Kafka topics on MSK (e.g. the outbox relay): grants, brokers and auth mode. */
  produceTo(cluster: MskClusterRef, topics: readonly string[]): this {
    if (!this.inVpc) {
      throw new ConsumerRuleError(`${this.node.path}: a Kafka producer on MSK must run in the cluster's VPC`);
    }
    MskGrants.produce(this.function, this, cluster, topics);
    return this.addEnvironment(LAMBDA_ENV.kafkaBrokers, cluster.bootstrapBrokers).addEnvironment(
      LAMBDA_ENV.mskIamAuth,
      String(cluster.iamAuth ?? true),
    );
  }

  /**
   * Deduplicate against `owner` (the dedup table or the app table's inbox). The owner's window is
   * checked at synth against the retry paths of every trigger of this function, including
   * triggers added after this call.
   */
  useDedupWindow(owner: DedupWindowOwner): this {
    owner.addRetryPath(() => {
      if (this.triggerPaths.length === 0)
        return { consumer: this.consumerName, description: "no trigger", seconds: 0 };
      const longest = this.triggerPaths.reduce((a, b) => (b.seconds > a.seconds ? b : a));
      return { consumer: this.consumerName, description: longest.description, seconds: longest.seconds };
    });
    return this;
  }

  /**
   * Acknowledges cdk-nag's AwsSolutions-IAM5[Resource::*] on this function's role, for actions that
   * AWS does not scope by resource. Every caller adds its reason; all of them are recorded.
   */
  acknowledgeWildcardResource(reason: string): void {
    this.wildcardReasons.push(reason);
    Validations.of(this.function.role ?? this.function).acknowledge({
      id: "AwsSolutions-IAM5[Resource::*]",
      reason: `Resource * only for actions without resource-level permissions. ${this.wildcardReasons.join(" ")}`,
    });
  }

  /** The ENI permissions Lambda needs in a VPC and for an MSK event source mapping's pollers. */
  protected grantNetworking(): void {
    if (this.networkingGranted) return;
    this.networkingGranted = true;
    this.function.addToRolePolicy(
      new iam.PolicyStatement({
        actions: [
          "ec2:CreateNetworkInterface",
          "ec2:DescribeNetworkInterfaces",
          "ec2:DeleteNetworkInterface",
          "ec2:AssignPrivateIpAddresses",
          "ec2:UnassignPrivateIpAddresses",
          "ec2:DescribeSubnets",
          "ec2:DescribeSecurityGroups",
          "ec2:DescribeVpcs",
        ],
        resources: ["*"],
      }),
    );
    this.acknowledgeWildcardResource(
      "Lambda's VPC networking and MSK event-source pollers create, describe and delete ENIs; these EC2 actions " +
        "are not scoped by resource in Lambda's documented policies (AWSLambdaVPCAccessExecutionRole, " +
        "AWSLambdaMSKExecutionRole).",
    );
  }
}

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

  readonly function: NodejsFunction;
  readonly role: iam.IRole;
  readonly logGroup: logs.ILogGroup;
  readonly consumerName: string;
  readonly timeout: Duration;

  constructor(scope: Construct, id: string, props: ConsumerFunctionProps) {
    super(scope, id);
    assertEntryExists(props.entry, this.node.path);
    this.consumerName = props.consumerName ?? id;
    this.timeout = props.timeout ?? DEFAULT_TIMEOUT;
    const { consumerName, metricsNamespace, logRetention, environment, bundling, ...functionProps } = props;

    this.logGroup =
      props.logGroup ??
      new logs.LogGroup(this, "Logs", {
        retention: logRetention ?? logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      });
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
    [LAMBDA_ENV.powertoolsMetricsNamespace]: metricsNamespace,
    ...environment,
  };
}
