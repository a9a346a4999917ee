import { Duration, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { KafkaDlq, SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import {
  type BundlingOptions,
  NodejsFunction,
  type NodejsFunctionProps,
} from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { LAMBDA_ENV } from "../env.ts";
import { assertEntryExists, BUNDLING, FUNCTION_ARCHITECTURE, FUNCTION_RUNTIME } from "./functionDefaults.ts";
import { type MskClusterRef, MskGrants } from "./mskCluster.ts";
import {
  GLUE_BY_ID_REASON,
  grantGetSchemaVersionById,
  grantSchemaRegistryAccess,
  type MskSchemaRegistry,
  mskSchemaRegistryConfig,
  type SchemaRegistryAccess,
} from "./mskSchemaRegistry.ts";
import type { QueueWithDlq } from "./queueWithDlq.ts";
import {
  ladderRetryPathSeconds,
  ladderRuntimeConfig,
  ladderTopics,
  type RetryLadderDeclaration,
} from "./retryLadder.ts";
import {
  ConsumerRuleError,
  checkKafkaMapping,
  checkMskTrigger,
  checkSqsTrigger,
  checkVisibilityTimeout,
  defaultKafkaRetryAttempts,
  formatSeconds,
  isKnown,
  kafkaWaitHandBacks,
  type ProvisionedPollers,
  type RetryPath,
} from "./rules.ts";

/** Anything that remembers dedup keys for a window: the dedup table, or the app table's inbox. */
export interface DedupWindowOwner {
  readonly window: Duration;
  addRetryPath(path: () => RetryPath): void;
  /**
   * The environment that makes the code write this window (the dedup table: `DEDUP_TABLE_NAME`
   * and `DEDUP_WINDOW_SECONDS`), so the window synth checks is the one the library writes.
   */
  readonly windowEnvironment?: Readonly<Record<string, string>>;
}

/** What makes a function a consumer, whoever built the function. */
export interface ConsumerOptions {
  /**
   * The consumer's name: its dedup scope (as `CONSUMER_NAME`, so a replaced function keeps its keys)
   * and `POWERTOOLS_SERVICE_NAME`. Choose it once and keep it: stored dedup keys are scoped by it.
   * @default the construct id
   */
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
  /** @default FUNCTION_RUNTIME (Node.js 24) */
  readonly runtime?: lambda.Runtime;
  /** @default FUNCTION_ARCHITECTURE (arm64) */
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
  /** @default - a role of its own: no managed policies, logs scoped to its log group */
  readonly role?: iam.IRole;
  /** @default - a log group of its own, with `logRetention` */
  readonly logGroup?: logs.ILogGroup;
}

/** Options of `ConsumerFunction.addSqsTrigger`. */
export interface SqsTriggerOptions {
  /**
   * Records per batch: 1–10 on a FIFO queue; 1–10,000 on a standard queue, where above 10 needs a
   * `maxBatchingWindow` of at least 1 second. @default 10
   */
  readonly batchSize?: number;
  /**
   * How long the poller gathers records before invoking (0–5 min; none on FIFO queues). It adds to
   * the visibility timeout the queue needs. @default Duration.seconds(0)
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * Concurrent invocations this trigger may use (2–1000). Not with `provisionedPollers` (Lambda
   * refuses both; the pollers bound the concurrency there).
   * @default 5, or none with `provisionedPollers`
   */
  readonly maxConcurrency?: number;
  /**
   * Provisioned mode: a minimum of event pollers kept ready and a maximum to scale to
   * (2 ≤ minimumPollers ≤ 200, minimumPollers ≤ maximumPollers ≤ 10,000; Lambda's
   * ProvisionedPollerConfig), for traffic that must not wait for Lambda's own scaling. Each poller
   * is billed while provisioned.
   * @default - none: Lambda scales the pollers (standard mode), bounded by `maxConcurrency`
   */
  readonly provisionedPollers?: ProvisionedPollers;
  /** Also export the queue URL under this variable, e.g. `ORDERS_QUEUE_URL`. @default - none */
  readonly queueUrlEnv?: string;
  /** Also export the DLQ URL under this variable, besides `DLQ_URL`. @default - none */
  readonly dlqUrlEnv?: string;
}

/** Provisioned mode's pollers of a Kafka trigger. */
export interface KafkaProvisionedPollers extends ProvisionedPollers {
  /**
   * Shares the pollers (Event Poller Units) of every mapping with this name in the cluster's VPC,
   * to lower the cost of provisioned mode for many quiet topics: 1 to 128 letters, digits, `-` or
   * `_`; at most 100 mappings per group, their maximum pollers summing to at most 2,000. Every
   * mapping of the trigger (one per ladder topic) joins the group.
   * @default - none: each mapping has pollers of its own
   */
  readonly pollerGroupName?: string;
}

/** Options of `ConsumerFunction.addMskTrigger`. */
export interface MskTriggerOptions {
  /** Consumer group of the main topic; retry topics use `<group>.<retry suffix>`. @default the consumer name */
  readonly consumerGroupId?: string;
  /** Records per batch (1–10,000). @default 100 */
  readonly batchSize?: number;
  /** How long the poller gathers records before invoking (0–5 min). @default Duration.seconds(1) */
  readonly maxBatchingWindow?: Duration;
  /** Where a new consumer group starts. @default lambda.StartingPosition.TRIM_HORIZON */
  readonly startingPosition?: lambda.StartingPosition;
  /**
   * Provisioned mode's pollers, on every mapping of the trigger (1 ≤ minimumPollers ≤ 200,
   * minimumPollers ≤ maximumPollers ≤ 2,000, an optional `pollerGroupName`). A Kafka trigger is
   * always in provisioned mode: the consumer's partial batch responses (ReportBatchItemFailures),
   * bisection, retry limits, the Kafka on-failure destination and the `schemaRegistry`
   * integration exist only there; without it Lambda would ignore the consumer's answer and commit
   * the records it handed back.
   * @default { minimumPollers: 1, maximumPollers: 2 }
   */
  readonly provisionedPollers?: KafkaProvisionedPollers;
  /**
   * MaximumRetryAttempts of every mapping (0–10,000). Lambda retries a batch whose invocation
   * crashed (out of memory, a runtime crash, a timeout), bisecting it down to the crashing record,
   * and the records the consumer handed back unfinished; after this many retries it writes the
   * record to the dead-letter topic itself (the mapping's `kafka://<topic>.DLQ` on-failure
   * destination). Each hand-back uses an attempt, and a healthy record on a retry topic is handed
   * back while it waits to be due, so each mapping needs at least the waits of its rung
   * (`kafkaWaitHandBacks`: ⌈delay ÷ (timeout − 5 s)⌉) + 1; synth refuses fewer.
   * @default per mapping, `defaultKafkaRetryAttempts`: those waits + 10
   */
  readonly retryAttempts?: number;
  /**
   * The main topic's mapping's own schema-registry integration (Glue or Confluent; the retry
   * topics' mappings read the copies, which carry what the function got); see mskSchemaRegistry.ts.
   * @default none
   */
  readonly schemaRegistry?: MskSchemaRegistry;
}

interface TriggerPath {
  readonly description: string;
  /** `undefined` when a duration of the path is a token. */
  readonly seconds: number | undefined;
}

const DEFAULT_TIMEOUT = Duration.seconds(30);

const MSK_MAPPING_REASON =
  "An MSK event source mapping's pollers read the cluster's brokers (kafka:GetBootstrapBrokers) and create, " +
  "describe and delete ENIs in its VPC; these actions take no resource (AWSLambdaMSKExecutionRole).";

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
  /** Each consumed ladder topic's delay (0 for a main topic), for the Kafka rule's retry budget. */
  private readonly kafkaTopicDelays = new Map<string, number>();
  private networkingGranted = false;
  private readonly wildcardReasons: string[] = [];

  constructor(scope: Construct, id: string) {
    super(scope, id);
    // Every Kafka mapping of this consumer, also one added by hand with `addEventSource`.
    this.node.addValidation({ validate: () => this.validateKafkaMappings() });
  }

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
    const pollers = options.provisionedPollers;
    // Lambda takes either: provisioned pollers bound the concurrency themselves.
    const maxConcurrency = options.maxConcurrency ?? (pollers ? undefined : 5);
    checkSqsTrigger({
      fifo: q.fifo,
      batchSize,
      batchingWindowSeconds: window.toSeconds(),
      ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
      ...(pollers ? { provisionedPollers: pollers } : {}),
      path: this.node.path,
    });
    checkVisibilityTimeout({
      queue: q.node.path,
      visibilityTimeoutSeconds: q.visibilityTimeout.toSeconds(),
      consumer: this.consumerName,
      functionTimeoutSeconds: this.timeout.toSeconds(),
      batchingWindowSeconds: window.toSeconds(),
      heartbeat: q.visibilityHeartbeat,
      path: this.node.path,
    });
    // aws-cdk-lib checks SQS maximum pollers against 2,000, an older limit than Lambda's 10,000:
    // above it the poller config is set on the CloudFormation resource instead.
    const cdkChecksPollers = pollers && !(isKnown(pollers.maximumPollers) && pollers.maximumPollers > 2000);
    const source = new SqsEventSource(q.queue, {
      batchSize,
      ...(window.isUnresolved() || window.toSeconds() > 0 ? { maxBatchingWindow: window } : {}),
      reportBatchItemFailures: true,
      ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
      ...(pollers && cdkChecksPollers ? { provisionedPollerConfig: pollers } : {}),
    });
    this.function.addEventSource(source);
    if (pollers && !cdkChecksPollers) {
      const mapping = this.function.node.children.find(
        (c): c is lambda.EventSourceMapping =>
          c instanceof lambda.EventSourceMapping && c.eventSourceMappingId === source.eventSourceMappingId,
      );
      (mapping?.node.defaultChild as lambda.CfnEventSourceMapping | undefined)?.addPropertyOverride(
        "ProvisionedPollerConfig",
        { MinimumPollers: pollers.minimumPollers, MaximumPollers: pollers.maximumPollers },
      );
    }
    q.grantSendToDeadLetterQueue(this.function);
    // On a standard queue, a healthy record on its last receive (held by another invocation, or not
    // started for lack of time) is sent again to this queue as a fresh copy (sqsSettlement.ts,
    // requeueHealthy), so it never reaches the DLQ without having failed. FIFO parks it instead.
    if (!q.fifo) q.queue.grantSendMessages(this.function);
    this.addEnvironment(LAMBDA_ENV.dlqUrl, q.deadLetterQueue.queueUrl);
    if (options.queueUrlEnv) this.addEnvironment(options.queueUrlEnv, q.queue.queueUrl);
    if (options.dlqUrlEnv) this.addEnvironment(options.dlqUrlEnv, q.deadLetterQueue.queueUrl);
    this.triggerPaths.push({ description: q.retryPathDescription, seconds: q.retryPathSeconds });
    return source;
  }

  /**
   * Consume a Kafka topic on MSK with its retry ladder: one event source mapping for the main topic
   * and one for each retry topic (each with its own consumer group), all in provisioned mode with
   * ReportBatchItemFailures. The consumer moves failures up the ladder and dead-letters them with
   * their context. What no consumer can route (a record that crashes the function: out of memory,
   * a runtime crash, a timeout) Lambda handles on every rung: it bisects the batch down to that
   * record, retries it `retryAttempts` times and writes it to the dead-letter topic
   * (`kafka://<topic>.DLQ`), so it neither blocks its partition nor is dropped. Synth fails on any
   * Kafka mapping of this function that breaks this (`Kafka*` rule codes).
   * Grants read on the consumed topics, write on the retry and dead-letter topics (the consumer's
   * producer and Lambda's on-failure destination both write with the function's role), and exports
   * `KAFKA_BROKERS`, `KAFKA_TOPIC`, `KAFKA_RETRY_LADDER`, `MSK_IAM_AUTH`.
   */
  addMskTrigger(
    cluster: MskClusterRef,
    ladder: RetryLadderDeclaration,
    options: MskTriggerOptions = {},
  ): lambda.EventSourceMapping[] {
    if (!this.inVpc) {
      throw new ConsumerRuleError(
        "MskConsumerOutsideVpc",
        "an MSK consumer must run in the cluster's VPC (give vpc, vpcSubnets and securityGroups) " +
          "to publish to its retry and dead-letter topics.",
        this.node.path,
      );
    }
    const pollers = options.provisionedPollers ?? { minimumPollers: 1, maximumPollers: 2 };
    const batchSize = options.batchSize ?? 100;
    const window = options.maxBatchingWindow ?? Duration.seconds(1);
    const topics = ladderTopics(ladder);
    const consumed = topics.filter((t) => t.role !== "dead-letter");
    const deadLetter = topics.find((t) => t.role === "dead-letter")!.name;
    checkMskTrigger({
      batchSize,
      batchingWindowSeconds: window.toSeconds(),
      minimumPollers: pollers.minimumPollers,
      maximumPollers: pollers.maximumPollers,
      ...(pollers.pollerGroupName !== undefined
        ? { pollerGroupName: pollers.pollerGroupName, mappingsInGroup: consumed.length }
        : {}),
      path: this.node.path,
    });
    for (const t of consumed) this.kafkaTopicDelays.set(t.name, t.delaySeconds);
    // A timeout that is a token leaves the waits unknown: the default is then the headroom alone.
    const timeoutSeconds = this.timeout.isUnresolved() ? Number.POSITIVE_INFINITY : this.timeout.toSeconds();
    const group = options.consumerGroupId ?? this.consumerName;
    const groupOf = (topic: string) =>
      topic === ladder.topic ? group : `${group}${topic.slice(ladder.topic.length)}`;
    const registry = options.schemaRegistry
      ? mskSchemaRegistryConfig(Stack.of(this), this.node.path, options.schemaRegistry)
      : undefined;
    // The mapping decodes Glue frames with the function's role, by schema version id.
    if (options.schemaRegistry?.kind === "glue") {
      grantGetSchemaVersionById(this.function);
      this.acknowledgeWildcardResource(GLUE_BY_ID_REASON);
    }

    const mappings = consumed.map(
      (t) =>
        new lambda.EventSourceMapping(this, `Msk-${t.name}`, {
          target: this.function,
          eventSourceArn: cluster.clusterArn,
          kafkaTopic: t.name,
          kafkaConsumerGroupId: groupOf(t.name),
          startingPosition: options.startingPosition ?? lambda.StartingPosition.TRIM_HORIZON,
          batchSize,
          maxBatchingWindow: window,
          provisionedPollerConfig: pollers,
          reportBatchItemFailures: true,
          // The main topic's only: a retry copy carries what the function got, which a registry
          // mapping would refuse as DESERIALIZATION_ERROR (lib/kafka/lambdaDecoded.ts says why).
          ...(registry && t.role === "main" ? { schemaRegistryConfig: registry.config } : {}),
          // A record that crashes the function (out of memory, a runtime crash, a timeout) is no
          // error the consumer can route. On every rung Lambda bisects to it, retries it a finite
          // number of times and writes it to the dead-letter topic itself, with its bytes (Lambda's
          // failure metadata around them, which `npm run dlq` reads): nothing blocks, nothing is
          // dropped. The limit also counts the consumer's hand-backs (a record not due yet, not
          // started for time, a retry produce that failed), so it leaves room for the waits of the
          // rung (`defaultKafkaRetryAttempts`); no maximum record age, since waiting is no failure.
          bisectBatchOnError: true,
          retryAttempts: options.retryAttempts ?? defaultKafkaRetryAttempts(t.delaySeconds, timeoutSeconds),
          onFailure: new KafkaDlq(deadLetter),
        }),
    );
    this.grantMskTrigger(cluster, topics, groupOf);
    this.addEnvironment(LAMBDA_ENV.kafkaBrokers, cluster.bootstrapBrokers)
      .addEnvironment(LAMBDA_ENV.kafkaTopic, ladder.topic)
      .addEnvironment(LAMBDA_ENV.kafkaRetryLadder, JSON.stringify(ladderRuntimeConfig(ladder)))
      .addEnvironment(LAMBDA_ENV.mskIamAuth, String(cluster.iamAuth ?? true));
    for (const [name, value] of Object.entries(registry?.env ?? {})) this.addEnvironment(name, value);
    this.addLadderRetryPath(ladder);
    return mappings;
  }

  /** What the trigger's mappings and the consumer's producer do with the function's role. */
  private grantMskTrigger(
    cluster: MskClusterRef,
    topics: ReturnType<typeof ladderTopics>,
    groupOf: (topic: string) => string,
  ): void {
    const consumed = topics.filter((t) => t.role !== "dead-letter");
    // The mapping's own needs, whatever built the function (`fromFunction` too): Lambda checks the
    // role for them when it creates the mapping.
    MskGrants.eventSourceMapping(this.function, cluster);
    this.acknowledgeWildcardResource(MSK_MAPPING_REASON);
    MskGrants.consume(
      this.function,
      this,
      cluster,
      consumed.map((t) => t.name),
      consumed.map((t) => groupOf(t.name)),
    );
    // The retry and dead-letter topics: the consumer's producer writes both, and Lambda writes the
    // on-failure destination's records (the dead-letter topic) with the function's role too.
    MskGrants.produce(
      this.function,
      this,
      cluster,
      topics.filter((t) => t.role !== "main").map((t) => t.name),
    );
  }

  /** The ladder's retry path, which the dedup window must outlast (`useDedupWindow`). */
  private addLadderRetryPath(ladder: RetryLadderDeclaration): void {
    this.triggerPaths.push({
      description:
        `topic ${ladder.topic}: retry ladder ${ladder.retryDelaysSeconds.map((s) => formatSeconds(s)).join(" → ")} ` +
        `+ the longest stage's retention (the DLQ's counts a replay into the main topic)` +
        (ladder.plannedReplaySeconds
          ? ` + planned replay ${formatSeconds(ladder.plannedReplaySeconds)}`
          : ""),
      seconds: ladderRetryPathSeconds(ladder),
    });
  }

  /** Produce to Kafka topics on MSK (e.g. the outbox relay): grants, brokers and auth mode. */
  produceTo(cluster: MskClusterRef, topics: readonly string[]): this {
    if (!this.inVpc) {
      throw new ConsumerRuleError(
        "KafkaProducerOutsideVpc",
        "a Kafka producer on MSK must run in the cluster's VPC",
        this.node.path,
      );
    }
    MskGrants.produce(this.function, this, cluster, topics);
    return this.addEnvironment(LAMBDA_ENV.kafkaBrokers, cluster.bootstrapBrokers).addEnvironment(
      LAMBDA_ENV.mskIamAuth,
      String(cluster.iamAuth ?? true),
    );
  }

  /**
   * Let this function's own code use a schema registry (`glueRegistry()` / `confluentRegistry()`):
   * the outbox relay framing what it produces, or a consumer that decodes framed bytes itself.
   * Glue: `glue:GetRegistry`, `GetSchemaVersion` and `GetSchemaByDefinition` on the registry and
   * its schemas (with `register`, also `RegisterSchemaVersion` and `CreateSchema`), and
   * `GLUE_SCHEMA_REGISTRY_NAME`. Confluent: read on the secret, `SCHEMA_REGISTRY_URL` and
   * `SCHEMA_REGISTRY_SECRET_ARN`. For the MSK trigger's own integration use
   * `addMskTrigger({ schemaRegistry })`.
   */
  useSchemaRegistry(access: SchemaRegistryAccess): this {
    const env = grantSchemaRegistryAccess(Stack.of(this), this.node.path, this.function, access);
    if (access.kind === "glue") this.acknowledgeWildcardResource(GLUE_BY_ID_REASON);
    for (const [name, value] of Object.entries(env)) this.addEnvironment(name, value);
    return this;
  }

  /**
   * Deduplicate against `owner` (the dedup table or the app table's inbox). The owner's window is
   * checked at synth against the retry paths of every trigger of this function, including
   * triggers added after this call.
   */
  useDedupWindow(owner: DedupWindowOwner): this {
    for (const [name, value] of Object.entries(owner.windowEnvironment ?? {}))
      this.addEnvironment(name, value);
    owner.addRetryPath(() => {
      // Paths of unknown length (tokens) are not checked; the longest known one is.
      const known = this.triggerPaths.filter(
        (p): p is TriggerPath & { seconds: number } => p.seconds !== undefined,
      );
      if (known.length === 0) {
        const description = this.triggerPaths.length === 0 ? "no trigger" : "retention unknown at synth";
        return {
          consumer: this.consumerName,
          description,
          seconds: this.triggerPaths.length === 0 ? 0 : undefined,
        };
      }
      const longest = known.reduce((a, b) => (b.seconds > a.seconds ? b : a));
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

  /** The Kafka rule (`checkKafkaMapping`) over every Kafka event source mapping of this function. */
  private validateKafkaMappings(): string[] {
    const errors: string[] = [];
    const stack = Stack.of(this);
    const mappedBy = new Map<string, string>();
    for (const c of this.node.findAll()) {
      if (!(c instanceof lambda.CfnEventSourceMapping)) continue;
      // Kafka mappings name topics; SQS, stream and MQ mappings do not.
      const topics = stack.resolve(c.topics) as string[] | undefined;
      if (!topics?.length) continue;
      // A record's coordinates hold its dedup lease (a crashed invocation's lease is taken over by
      // the redelivery of the same record), which is sound only while one mapping reads each
      // partition of a topic for this consumer (its dedup scope).
      for (const t of topics) {
        const other = mappedBy.get(t);
        if (other) {
          errors.push(
            new ConsumerRuleError(
              "KafkaTopicMappedTwice",
              `topic "${t}" is read by two Kafka mappings of consumer "${this.consumerName}" (${other} and this one): ` +
                `each record would run in both, and the dedup lease a record's coordinates hold could not tell them ` +
                `apart. Read each topic with one mapping, or give the second consumer a function (and dedup scope) of its own.`,
              c.node.path,
            ).message,
          );
        } else mappedBy.set(t, c.node.path);
      }
      const destination = stack.resolve(c.destinationConfig) as
        | { onFailure?: { destination?: unknown } }
        | undefined;
      const responseTypes = (stack.resolve(c.functionResponseTypes) as string[] | undefined) ?? [];
      const kafkaConfig = stack.resolve(
        c.amazonManagedKafkaEventSourceConfig ?? c.selfManagedKafkaEventSourceConfig,
      ) as { schemaRegistryConfig?: unknown } | undefined;
      // A topic this function does not know from a ladder waits for nothing (a main topic).
      const delay = Math.max(0, ...topics.map((t) => this.kafkaTopicDelays.get(t) ?? 0));
      const waits = this.timeout.isUnresolved()
        ? undefined
        : kafkaWaitHandBacks(delay, this.timeout.toSeconds());
      try {
        checkKafkaMapping({
          topic: topics.join(","),
          topics,
          provisioned: c.provisionedPollerConfig !== undefined,
          reportBatchItemFailures: responseTypes.includes("ReportBatchItemFailures"),
          schemaRegistry: kafkaConfig?.schemaRegistryConfig !== undefined,
          bisect: stack.resolve(c.bisectBatchOnFunctionError) === true,
          ...(c.batchSize !== undefined ? { batchSize: c.batchSize } : {}),
          ...(waits !== undefined ? { minimumRetryAttempts: waits + 1 } : {}),
          ...(c.maximumRetryAttempts !== undefined ? { retryAttempts: c.maximumRetryAttempts } : {}),
          ...(c.maximumRecordAgeInSeconds !== undefined
            ? { maxRecordAgeSeconds: c.maximumRecordAgeInSeconds }
            : {}),
          ...(destination?.onFailure?.destination !== undefined
            ? { onFailureDestination: String(destination.onFailure.destination) }
            : {}),
          path: c.node.path,
        });
      } catch (error) {
        errors.push((error as Error).message);
      }
    }
    return errors;
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
