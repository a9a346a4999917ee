import { type Duration, Stack, Validations } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { Construct } from "constructs";
import { DynamoDbStreamTrigger, type DynamoDbStreamTriggerOptions } from "./dynamoDbStreamTrigger.ts";
import { KinesisTrigger, type KinesisTriggerOptions, type KinesisTriggerStream } from "./kinesisTrigger.ts";
import type { MskClusterRef } from "./mskCluster.ts";
import {
  GLUE_BY_ID_REASON,
  grantSchemaRegistryAccess,
  type SchemaRegistryAccess,
} from "./mskSchemaRegistry.ts";
import { grantProduce, kafkaMappingErrors, MskTrigger, type MskTriggerOptions } from "./mskTrigger.ts";
import type { RetryLadderDeclaration } from "./retryLadder.ts";
import type { RetryPath } from "./rules/dedupRules.ts";
import { SqsTrigger, type SqsTriggerOptions, type SqsTriggerQueue } from "./sqsTrigger.ts";
import { streamMappingErrors } from "./streamTrigger.ts";

/** Anything that remembers dedup keys for a window: the dedup table, or the app table's inbox. */
export interface DedupWindowOwner {
  /** How long keys are remembered: the TTL of a dedup record, checked against the retry paths. */
  readonly window: Duration;
  /** Declares a way messages reach a consumer of this owner; evaluated at synth, so later triggers count. */
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

/** One way messages come back to a consumer: what the dedup window must outlast. */
export interface TriggerRetryPath {
  /** E.g. `queue orders: retention 4d + parked in the DLQ 14d + redriven 4d`. */
  readonly description: string;
  /** `undefined` when a duration of the path is unknown at synth (a token, an imported queue). */
  readonly seconds: number | undefined;
}

/**
 * A trigger with the library's rules, bound to a consumer by `ConsumerFunctionBase.addTrigger`, as
 * an `IEventSource` of aws-cdk-lib is bound to a function by `addEventSource`: `SqsTrigger`,
 * `MskTrigger`, `KinesisTrigger`, `DynamoDbStreamTrigger`.
 */
export interface IConsumerTrigger {
  /** Adds the event source mapping(s), grants and variables to `consumer`, checking the rules. */
  bind(consumer: ConsumerFunctionBase): void;
}

/**
 * A consumer: a Lambda function with trigger methods that encode the library's rules:
 * ReportBatchItemFailures always on, the SQS visibility rule checked, the dedup window checked
 * against every trigger's retry path. `ConsumerFunction` builds the function from an entry;
 * `ConsumerFunction.fromFunction` applies the same rules to a function built any other way, and
 * `PrebuiltFunction` deploys the library's own handlers.
 */
export abstract class ConsumerFunctionBase extends Construct {
  /** The Lambda function. */
  abstract readonly function: lambda.Function;
  /** The consumer's name (its dedup scope). */
  abstract readonly consumerName: string;
  /** The function's timeout, which the visibility rule is checked against. */
  abstract readonly timeout: Duration;
  private readonly retryPaths: TriggerRetryPath[] = [];
  private networkingGranted = false;
  private readonly wildcardReasons: string[] = [];

  /** Creates the construct and adds the synth check of every Kafka and stream mapping of the function. */
  constructor(scope: Construct, id: string) {
    super(scope, id);
    // Every Kafka and stream mapping of this consumer, also one added by hand with `addEventSource`.
    this.node.addValidation({ validate: () => [...kafkaMappingErrors(this), ...streamMappingErrors(this)] });
  }

  /** Whether the function runs in a VPC (an MSK consumer or producer must). */
  get inVpc(): boolean {
    return this.function.isBoundToVpc;
  }

  /** Sets an environment variable of the function. */
  addEnvironment(name: string, value: string): this {
    this.function.addEnvironment(name, value);
    return this;
  }

  /** Binds a trigger (`SqsTrigger`, `MskTrigger`, `KinesisTrigger`, `DynamoDbStreamTrigger`) to this consumer. */
  addTrigger(trigger: IConsumerTrigger): this {
    trigger.bind(this);
    return this;
  }

  /**
   * Consume an SQS queue (`SqsTrigger`): a `QueueWithDlq`, or any `sqs.IQueue` with its
   * dead-letter queue. Returns the event source.
   */
  addSqsTrigger(queue: SqsTriggerQueue, options: SqsTriggerOptions = {}): SqsEventSource {
    const trigger = new SqsTrigger(queue, options);
    this.addTrigger(trigger);
    return trigger.eventSource!;
  }

  /**
   * Consume a Kafka topic on MSK with its retry ladder (`MskTrigger`). Returns the event source
   * mappings, one per consumed topic of the ladder.
   */
  addMskTrigger(
    cluster: MskClusterRef,
    ladder: RetryLadderDeclaration,
    options: MskTriggerOptions = {},
  ): lambda.EventSourceMapping[] {
    const trigger = new MskTrigger(cluster, ladder, options);
    this.addTrigger(trigger);
    return trigger.mappings;
  }

  /**
   * Consume a Kinesis data stream (`KinesisTrigger`): a `KinesisStream`, or any `kinesis.IStream`
   * (`kinesis.Stream.fromStreamArn` for one made elsewhere). Returns the event source mapping.
   */
  addKinesisTrigger(
    stream: KinesisTriggerStream,
    options: KinesisTriggerOptions = {},
  ): lambda.EventSourceMapping {
    const trigger = new KinesisTrigger(stream, options);
    this.addTrigger(trigger);
    return trigger.mapping!;
  }

  /**
   * Consume a DynamoDB table's stream (`DynamoDbStreamTrigger`): any `dynamodb.ITable` or
   * `ITableV2` with a stream (an imported one with its `tableStreamArn`). Returns the event
   * source mapping.
   */
  addDynamoDbStreamTrigger(
    table: dynamodb.ITable,
    options: DynamoDbStreamTriggerOptions = {},
  ): lambda.EventSourceMapping {
    const trigger = new DynamoDbStreamTrigger(table, options);
    this.addTrigger(trigger);
    return trigger.mapping!;
  }

  /** Declares a way messages come back to this consumer; the dedup window is checked against the longest. */
  addRetryPath(path: TriggerRetryPath): void {
    this.retryPaths.push(path);
  }

  /** Produce to Kafka topics on MSK (e.g. the outbox relay): grants, brokers and auth mode. */
  produceTo(cluster: MskClusterRef, topics: readonly string[]): this {
    grantProduce(this, cluster, topics);
    return this;
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
    owner.addRetryPath(() => this.longestRetryPath());
    return this;
  }

  /** The longest retry path of this consumer's triggers; paths of unknown length are not checked. */
  private longestRetryPath(): RetryPath {
    const known = this.retryPaths.filter(
      (p): p is TriggerRetryPath & { seconds: number } => p.seconds !== undefined,
    );
    if (known.length === 0) {
      const description = this.retryPaths.length === 0 ? "no trigger" : "retention unknown at synth";
      return {
        consumer: this.consumerName,
        description,
        seconds: this.retryPaths.length === 0 ? 0 : undefined,
      };
    }
    const longest = known.reduce((a, b) => (b.seconds > a.seconds ? b : a));
    return { consumer: this.consumerName, description: longest.description, seconds: longest.seconds };
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
