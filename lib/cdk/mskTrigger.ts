import { Duration, Stack } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { KafkaDlq } from "aws-cdk-lib/aws-lambda-event-sources";
import { LAMBDA_ENV } from "../env.ts";
import type { ConsumerFunctionBase, IConsumerTrigger } from "./consumerFunctionBase.ts";
import { type MskClusterRef, MskGrants } from "./mskCluster.ts";
import {
  GLUE_BY_ID_REASON,
  grantGetSchemaVersionById,
  type MskSchemaRegistry,
  mskSchemaRegistryConfig,
} from "./mskSchemaRegistry.ts";
import {
  ladderRetryPathSeconds,
  ladderRuntimeConfig,
  ladderTopics,
  type RetryLadderDeclaration,
} from "./retryLadder.ts";
import {
  checkKafkaMapping,
  checkMskTrigger,
  defaultKafkaRetryAttempts,
  kafkaWaitHandBacks,
} from "./rules/kafkaRules.ts";
import type { ProvisionedPollers } from "./rules/pollers.ts";
import { ConsumerRuleError, formatSeconds } from "./rules/ruleError.ts";

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

/** Options of `MskTrigger` (and `ConsumerFunctionBase.addMskTrigger`). */
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
   * (⌈delay ÷ (timeout − 5 s)⌉) + 1; synth refuses fewer.
   * @default per mapping, those waits + 10
   */
  readonly retryAttempts?: number;
  /**
   * The main topic's mapping's own schema-registry integration (Glue or Confluent; the retry
   * topics' mappings read the copies, which carry what the function got).
   * @default none
   */
  readonly schemaRegistry?: MskSchemaRegistry;
}

const MSK_MAPPING_REASON =
  "An MSK event source mapping's pollers read the cluster's brokers (kafka:GetBootstrapBrokers) and create, " +
  "describe and delete ENIs in its VPC; these actions take no resource (AWSLambdaMSKExecutionRole).";

/** Each consumed ladder topic's delay (0 for a main topic) per consumer, for the Kafka rule's retry budget. */
const topicDelays = new WeakMap<ConsumerFunctionBase, Map<string, number>>();
const delaysOf = (consumer: ConsumerFunctionBase) => {
  const delays = topicDelays.get(consumer) ?? new Map<string, number>();
  topicDelays.set(consumer, delays);
  return delays;
};

/**
 * A Kafka topic on MSK with its retry ladder: one event source mapping for the main topic and one
 * for each retry topic (each with its own consumer group), all in provisioned mode with
 * ReportBatchItemFailures. The consumer moves failures up the ladder and dead-letters them with
 * their context. What no consumer can route (a record that crashes the function: out of memory, a
 * runtime crash, a timeout) Lambda handles on every rung: it bisects the batch down to that record,
 * retries it `retryAttempts` times and writes it to the dead-letter topic (`kafka://<topic>.DLQ`),
 * so it neither blocks its partition nor is dropped. Synth fails on any Kafka mapping of the
 * consumer that breaks this (`Kafka*` rule codes). Grants read on the consumed topics, write on
 * the retry and dead-letter topics (the consumer's producer and Lambda's on-failure destination
 * both write with the function's role), what the mapping itself needs of the role, and exports
 * `KAFKA_BROKERS`, `KAFKA_TOPIC`, `KAFKA_RETRY_LADDER`, `MSK_IAM_AUTH`. Bind it with
 * `consumer.addTrigger(trigger)`.
 */
export class MskTrigger implements IConsumerTrigger {
  /** The event source mappings, once bound: one per consumed topic of the ladder. */
  mappings: lambda.EventSourceMapping[] = [];

  /** The cluster the mapping reads. */
  readonly cluster: MskClusterRef;
  /** The topics it reads and writes: the main topic, the retry rungs, the DLQ topic. */
  readonly ladder: RetryLadderDeclaration;
  private readonly options: MskTriggerOptions;

  /** A trigger for `ladder`'s topics on `cluster`; nothing is created until it is bound. */
  constructor(cluster: MskClusterRef, ladder: RetryLadderDeclaration, options: MskTriggerOptions = {}) {
    this.cluster = cluster;
    this.ladder = ladder;
    this.options = options;
  }

  /**
   * Adds the mappings, grants and variables to `consumer`, checking the rules; throws
   * `ConsumerRuleError` when one is broken (e.g. `MskConsumerOutsideVpc`).
   */
  bind(consumer: ConsumerFunctionBase): void {
    if (!consumer.inVpc) {
      throw new ConsumerRuleError(
        "MskConsumerOutsideVpc",
        "an MSK consumer must run in the cluster's VPC (give vpc, vpcSubnets and securityGroups) " +
          "to publish to its retry and dead-letter topics.",
        consumer.node.path,
      );
    }
    const { cluster, ladder, options } = this;
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
      path: consumer.node.path,
    });
    for (const t of consumed) delaysOf(consumer).set(t.name, t.delaySeconds);
    // A timeout that is a token leaves the waits unknown: the default is then the headroom alone.
    const timeoutSeconds = consumer.timeout.isUnresolved()
      ? Number.POSITIVE_INFINITY
      : consumer.timeout.toSeconds();
    const group = options.consumerGroupId ?? consumer.consumerName;
    const groupOf = (topic: string) =>
      topic === ladder.topic ? group : `${group}${topic.slice(ladder.topic.length)}`;
    const registry = this.useRegistry(consumer);
    this.mappings = consumed.map(
      (t) =>
        new lambda.EventSourceMapping(consumer, `Msk-${t.name}`, {
          target: consumer.function,
          eventSourceArn: cluster.clusterArn,
          kafkaTopic: t.name,
          kafkaConsumerGroupId: groupOf(t.name),
          startingPosition: options.startingPosition ?? lambda.StartingPosition.TRIM_HORIZON,
          batchSize,
          maxBatchingWindow: window,
          provisionedPollerConfig: pollers,
          reportBatchItemFailures: true,
          // Lambda's event counts and its error counts (deserialization, schema registry, invoke
          // errors): EventSourceMappingMetricsConfig, Lambda API reference. OffsetLag is there anyway.
          metricsConfig: { metrics: [lambda.MetricType.EVENT_COUNT, lambda.MetricType.ERROR_COUNT] },
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
    grantMskTrigger(consumer, cluster, topics, groupOf);
    this.exportAndDeclare(consumer, registry?.env ?? {});
  }

  /** The trigger's registry integration, and what the mapping needs of the role to decode Glue frames. */
  private useRegistry(consumer: ConsumerFunctionBase) {
    const access = this.options.schemaRegistry;
    if (!access) return undefined;
    // The mapping decodes Glue frames with the function's role, by schema version id.
    if (access.kind === "glue") {
      grantGetSchemaVersionById(consumer.function);
      consumer.acknowledgeWildcardResource(GLUE_BY_ID_REASON);
    }
    return mskSchemaRegistryConfig(Stack.of(consumer), consumer.node.path, access);
  }

  /** The variables the consumer reads, and the ladder's retry path for the dedup window rule. */
  private exportAndDeclare(
    consumer: ConsumerFunctionBase,
    registryEnv: Readonly<Record<string, string>>,
  ): void {
    const { cluster, ladder } = this;
    consumer
      .addEnvironment(LAMBDA_ENV.kafkaBrokers, cluster.bootstrapBrokers)
      .addEnvironment(LAMBDA_ENV.kafkaTopic, ladder.topic)
      .addEnvironment(LAMBDA_ENV.kafkaRetryLadder, JSON.stringify(ladderRuntimeConfig(ladder)))
      .addEnvironment(LAMBDA_ENV.mskIamAuth, String(cluster.iamAuth ?? true));
    for (const [name, value] of Object.entries(registryEnv)) consumer.addEnvironment(name, value);
    consumer.addRetryPath({
      description:
        `topic ${ladder.topic}: retry ladder ${ladder.retryDelaysSeconds.map((s) => formatSeconds(s)).join(" → ")} ` +
        `+ the longest stage's retention (the DLQ's counts a replay into the main topic)` +
        (ladder.plannedReplaySeconds
          ? ` + planned replay ${formatSeconds(ladder.plannedReplaySeconds)}`
          : ""),
      seconds: ladderRetryPathSeconds(ladder),
    });
  }
}

/** What the trigger's mappings and the consumer's producer do with the function's role. */
function grantMskTrigger(
  consumer: ConsumerFunctionBase,
  cluster: MskClusterRef,
  topics: ReturnType<typeof ladderTopics>,
  groupOf: (topic: string) => string,
): void {
  const consumed = topics.filter((t) => t.role !== "dead-letter");
  // The mapping's own needs, whatever built the function (`fromFunction` too): Lambda checks the
  // role for them when it creates the mapping.
  MskGrants.eventSourceMapping(consumer.function, cluster);
  consumer.acknowledgeWildcardResource(MSK_MAPPING_REASON);
  MskGrants.consume(
    consumer.function,
    consumer,
    cluster,
    consumed.map((t) => t.name),
    consumed.map((t) => groupOf(t.name)),
  );
  // The retry and dead-letter topics: the consumer's producer writes both, and Lambda writes the
  // on-failure destination's records (the dead-letter topic) with the function's role too.
  MskGrants.produce(
    consumer.function,
    consumer,
    cluster,
    topics.filter((t) => t.role !== "main").map((t) => t.name),
  );
}

/** Produce to Kafka topics on MSK (e.g. the outbox relay): grants, brokers and auth mode. */
export function grantProduce(
  consumer: ConsumerFunctionBase,
  cluster: MskClusterRef,
  topics: readonly string[],
): void {
  if (!consumer.inVpc) {
    throw new ConsumerRuleError(
      "KafkaProducerOutsideVpc",
      "a Kafka producer on MSK must run in the cluster's VPC",
      consumer.node.path,
    );
  }
  MskGrants.produce(consumer.function, consumer, cluster, topics);
  consumer
    .addEnvironment(LAMBDA_ENV.kafkaBrokers, cluster.bootstrapBrokers)
    .addEnvironment(LAMBDA_ENV.mskIamAuth, String(cluster.iamAuth ?? true));
}

/** The Kafka rule (`checkKafkaMapping`) over every Kafka event source mapping of the consumer. */
export function kafkaMappingErrors(consumer: ConsumerFunctionBase): string[] {
  const errors: string[] = [];
  const stack = Stack.of(consumer);
  const mappedBy = new Map<string, string>();
  for (const c of consumer.node.findAll()) {
    if (!(c instanceof lambda.CfnEventSourceMapping)) continue;
    // Kafka mappings name topics; SQS, stream and MQ mappings do not.
    const topics = stack.resolve(c.topics) as string[] | undefined;
    if (!topics?.length) continue;
    const twice = topics.filter((t) => mappedBy.has(t));
    for (const t of twice) errors.push(mappedTwice(consumer, t, mappedBy.get(t)!, c.node.path));
    for (const t of topics) if (!mappedBy.has(t)) mappedBy.set(t, c.node.path);
    try {
      checkKafkaMapping(mappingCheckOf(consumer, stack, c, topics));
    } catch (error) {
      errors.push((error as Error).message);
    }
  }
  return errors;
}

/**
 * A topic read by two mappings of one consumer. A record's coordinates name its delivery in the
 * dedup store, which is sound only while one mapping reads each partition of a topic for this
 * consumer (its dedup scope).
 */
function mappedTwice(consumer: ConsumerFunctionBase, topic: string, other: string, path: string): string {
  return new ConsumerRuleError(
    "KafkaTopicMappedTwice",
    `topic "${topic}" is read by two Kafka mappings of consumer "${consumer.consumerName}" (${other} and this one): ` +
      `each record would run in both, and the dedup store could not tell their deliveries ` +
      `apart. Read each topic with one mapping, or give the second consumer a function (and dedup scope) of its own.`,
    path,
  ).message;
}

/** One Kafka mapping as `checkKafkaMapping` reads it. */
function mappingCheckOf(
  consumer: ConsumerFunctionBase,
  stack: Stack,
  c: lambda.CfnEventSourceMapping,
  topics: string[],
): Parameters<typeof checkKafkaMapping>[0] {
  const destination = stack.resolve(c.destinationConfig) as
    | { onFailure?: { destination?: unknown } }
    | undefined;
  const responseTypes = (stack.resolve(c.functionResponseTypes) as string[] | undefined) ?? [];
  const kafkaConfig = stack.resolve(
    c.amazonManagedKafkaEventSourceConfig ?? c.selfManagedKafkaEventSourceConfig,
  ) as { schemaRegistryConfig?: unknown } | undefined;
  // A topic this function does not know from a ladder waits for nothing (a main topic).
  const delays = delaysOf(consumer);
  const delay = Math.max(0, ...topics.map((t) => delays.get(t) ?? 0));
  const waits = consumer.timeout.isUnresolved()
    ? undefined
    : kafkaWaitHandBacks(delay, consumer.timeout.toSeconds());
  return {
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
  };
}
