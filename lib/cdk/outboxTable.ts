import { Duration, RemovalPolicy, Token, Validations } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { DynamoEventSource, SqsDlq } from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { OUTBOX_ENV } from "../env.ts";
import {
  OUTBOX_ATTR,
  OUTBOX_DEFAULTS,
  OUTBOX_IAM_ACTIONS,
  OUTBOX_PENDING_INDEX,
  OUTBOX_STREAM_FILTER_PATTERN,
  OUTBOX_TTL_ATTRIBUTE,
} from "../outbox/schema.ts";
import { ConsumerFunctionBase, type DedupWindowOwner } from "./consumerFunctionBase.ts";
import { acknowledgeGuardRule, CONTROL_TOWER_RULE } from "./guardAcknowledgements.ts";
import { PrebuiltFunction, type PrebuiltFunctionProps } from "./prebuiltFunction.ts";
import { dedupWindowValidation, type RetryPath } from "./rules/dedupRules.ts";
import { checkRelayParallelization } from "./rules/outboxRules.ts";

/** Props of `OutboxTable`. */
export interface OutboxTableProps {
  /** The table's name (3–255 characters: letters, digits, `_`, `-`, `.`). @default - a CloudFormation-generated name */
  readonly tableName?: string;
  /** A customer-managed key; writers, the relay and the sweeper are granted it. @default - AWS-managed key */
  readonly encryptionKey?: kms.IKey;
  /** Point-in-time recovery (35 days of backups). @default true */
  readonly pointInTimeRecovery?: boolean;
  /** What deleting the stack does to the table (business data, inbox and outbox). @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Whether the table may hold outbox events written without numbers (a writer with
   * `aggregateSequence: false`, or a library version before numbering). Then the relay and the
   * sweeper read an aggregate's newest older event before its first numbered one (a Query), so it
   * cannot overtake one still pending or parked. Say `false` for a table that never had such
   * writers: a first event then costs no read (`OUTBOX_UNNUMBERED_EVENTS=false`). @default true
   */
  readonly unnumberedEvents?: boolean;
}

/** Options of `OutboxTable.addRelay`. */
export interface RelayOptions {
  /** Stream records per batch (1–10,000). @default 100 */
  readonly batchSize?: number;
  /**
   * How long the poller gathers records before invoking (0–5 min). With none, Lambda invokes as
   * soon as a poll of the shard (about four a second) returns records, so an event waits a quarter
   * of a second for its relay, not up to the window; under load a batch still fills from the
   * backlog. A window trades that latency for fewer invocations when traffic is light.
   * @default Duration.seconds(0)
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * Whole-batch retries after bisecting (-1 for unlimited, or 0–10,000). A record that keeps failing
   * blocks its shard (and so the order of its aggregate) until then; the sweeper republishes
   * whatever the relay gave up on. @default 20
   */
  readonly retryAttempts?: number;
  /** Give up on records older than this (1 min–7 days; the stream keeps records 24 h). @default Duration.hours(6) */
  readonly maxRecordAge?: Duration;
  /**
   * Concurrent batches per stream shard. Only 1 is accepted: with more, Lambda keeps order only per
   * item, and every outbox event is its own item, so an aggregate's events could be published out
   * of order (`checkRelayParallelization` in rules.ts fails synth). @default 1
   */
  readonly parallelizationFactor?: number;
  /** Where the metadata of given-up batches goes (Lambda sends metadata only, not the records). @default - a new encrypted queue, retained 14 days */
  readonly onFailureQueue?: sqs.IQueue;
}

/** The prebuilt relay's or sweeper's function settings (VPC, memory, timeout, environment...). */
export type PrebuiltOptions = Omit<PrebuiltFunctionProps, "prebuilt">;

/** Options of `OutboxTable.addSweeper`. */
export interface SweeperOptions {
  /** How often the sweeper runs (a rate of at least 1 minute). @default events.Schedule.rate(Duration.minutes(1)) */
  readonly schedule?: events.Schedule;
}

/**
 * The app table: business items, inbox markers and outbox events (schema in
 * `lib/outbox/schema.ts`). Stream `NEW_IMAGE`, TTL, and the sparse pending GSI. `addRelay` wires
 * the stream to the relay (filter, bisect, partial batch responses, retry limit, maximum record
 * age, on-failure destination); `addSweeper` runs the sweeper on a schedule.
 */
export class OutboxTable extends Construct implements DedupWindowOwner {
  /** The app table: `pk`/`sk`, stream NEW_IMAGE, TTL, and the sparse pending GSI. */
  readonly table: dynamodb.Table;
  /** The inbox markers' TTL, written by the library (`OUTBOX_DEFAULTS.inboxWindowSeconds`). */
  readonly window: Duration = Duration.seconds(OUTBOX_DEFAULTS.inboxWindowSeconds);
  /** The relay's on-failure queue (metadata of given-up batches), once `addRelay` ran. */
  relayFailures?: sqs.IQueue;
  /** The relay's function, once `addRelay` ran. */
  relay?: ConsumerFunctionBase;
  /** The relay's stream mapping, once `addRelay` ran. */
  relaySource?: DynamoEventSource;
  /** The sweeper's function, once `addSweeper` ran. */
  sweeper?: ConsumerFunctionBase;
  /** The sweeper's schedule, once `addSweeper` ran. */
  sweeperSchedule?: events.Rule;
  private readonly retryPaths: Array<() => RetryPath> = [];
  private readonly unnumberedEvents: boolean;

  /** Creates the app table with its pending index, and the inbox window rule as a synth validation. */
  constructor(scope: Construct, id: string, props: OutboxTableProps = {}) {
    super(scope, id);
    this.unnumberedEvents = props.unnumberedEvents ?? true;
    this.table = new dynamodb.Table(this, "Table", {
      ...(props.tableName ? { tableName: props.tableName } : {}),
      partitionKey: { name: OUTBOX_ATTR.pk, type: dynamodb.AttributeType.STRING },
      sortKey: { name: OUTBOX_ATTR.sk, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      stream: dynamodb.StreamViewType.NEW_IMAGE,
      timeToLiveAttribute: OUTBOX_TTL_ATTRIBUTE,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: props.pointInTimeRecovery ?? true },
      ...(props.encryptionKey
        ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: props.encryptionKey }
        : { encryption: dynamodb.TableEncryption.AWS_MANAGED }),
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    this.table.addGlobalSecondaryIndex({
      indexName: OUTBOX_PENDING_INDEX,
      partitionKey: { name: OUTBOX_ATTR.pending, type: dynamodb.AttributeType.STRING },
      sortKey: { name: OUTBOX_ATTR.pendingSince, type: dynamodb.AttributeType.NUMBER },
      projectionType: dynamodb.ProjectionType.ALL,
    });
    this.node.addValidation(
      dedupWindowValidation(
        `${this.node.path} (inbox)`,
        () => this.window.toSeconds(),
        () => this.retryPaths.map((p) => p()),
      ),
    );
  }

  /** The table's name. */
  get tableName(): string {
    return this.table.tableName;
  }

  /** The ARN of the sparse pending GSI (`pending-index`), which the sweeper queries. */
  get pendingIndexArn(): string {
    return `${this.table.tableArn}/index/${OUTBOX_PENDING_INDEX}`;
  }

  /**
   * Declares a way messages reach a writer of this table; evaluated at synth, so later triggers
   * count. Prefer `addWriter`, which declares its triggers' paths.
   */
  addRetryPath(path: () => RetryPath): void {
    this.retryPaths.push(path);
  }

  /** A handler's unit of work: inbox marker + business items + outbox events in one transaction. */
  grantUnitOfWork(grantee: iam.IGrantable): iam.Grant {
    return this.grantActions(grantee, OUTBOX_IAM_ACTIONS.unitOfWork, [this.table.tableArn]);
  }

  /** A consumer that writes through the app table: grants, `APP_TABLE_NAME`, inbox window check. */
  addWriter(fn: ConsumerFunctionBase): void {
    this.grantUnitOfWork(fn.function);
    fn.addEnvironment(OUTBOX_ENV.tableName, this.table.tableName);
    fn.useDedupWindow(this);
  }

  /**
   * The relay on this table's stream. With no function, the library's prebuilt relay
   * (`PrebuiltFunction`, settings in `prebuilt`); or pass your own. Returns the relay's function:
   * grant it what its destinations need (`queue.grantSendMessages(relay.function)`, `produceTo`).
   */
  addRelay(
    fnOrOptions?: ConsumerFunctionBase | (RelayOptions & { readonly prebuilt?: PrebuiltOptions }),
    relayOptions?: RelayOptions,
  ): ConsumerFunctionBase {
    const own = fnOrOptions instanceof ConsumerFunctionBase;
    const options = (own ? relayOptions : fnOrOptions) ?? {};
    const fn = own
      ? fnOrOptions
      : new PrebuiltFunction(this, "Relay", {
          consumerName: "outbox-relay",
          description: "Publishes outbox events from the table's stream (reliable-consumers prebuilt relay)",
          ...(options as { prebuilt?: PrebuiltOptions }).prebuilt,
          prebuilt: "outboxRelay",
        });
    const onFailure =
      options.onFailureQueue ??
      new sqs.Queue(this, "RelayFailures", {
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
      });
    if (!options.onFailureQueue) {
      Validations.of(onFailure).acknowledge({
        id: "AwsSolutions-SQS3",
        reason:
          "This queue is itself a dead-letter destination: the on-failure destination of the outbox relay's " +
          "stream mapping. It holds failure metadata for inspection and is not consumed, so it has no DLQ.",
      });
      acknowledgeGuardRule(
        onFailure,
        CONTROL_TOWER_RULE.sqsDeadLetterQueue,
        "This queue is itself a dead-letter destination (the relay stream mapping's on-failure destination, " +
          "written by Lambda, not by an SQS redrive): it is not consumed, so it needs no DLQ, and no queue " +
          "redrives into it, so a redrive-allow policy would name no source.",
      );
    }
    const factor = options.parallelizationFactor ?? 1;
    if (!Token.isUnresolved(factor)) checkRelayParallelization(fn.node.path, factor);
    this.relayFailures = onFailure;
    this.relay = fn;
    const source = new DynamoEventSource(this.table, {
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: options.batchSize ?? 100,
      maxBatchingWindow: options.maxBatchingWindow ?? Duration.seconds(0),
      filters: [{ pattern: JSON.stringify(OUTBOX_STREAM_FILTER_PATTERN) }],
      bisectBatchOnError: true,
      reportBatchItemFailures: true,
      retryAttempts: options.retryAttempts ?? 20,
      maxRecordAge: options.maxRecordAge ?? Duration.hours(6),
      parallelizationFactor: factor,
      onFailure: new SqsDlq(onFailure),
    });
    fn.function.addEventSource(source);
    fn.acknowledgeWildcardResource(
      "The stream event source needs dynamodb:ListStreams, which IAM only grants on Resource * " +
        "(the stream read actions themselves are scoped to this table's stream).",
    );
    this.grantActions(fn.function, OUTBOX_IAM_ACTIONS.relay, [this.table.tableArn]);
    fn.addEnvironment(OUTBOX_ENV.tableName, this.table.tableName);
    if (!this.unnumberedEvents) fn.addEnvironment(OUTBOX_ENV.unnumberedEvents, "false");
    this.relaySource = source;
    return fn;
  }

  /**
   * The sweeper on a schedule. With no function, the library's prebuilt sweeper; or pass your own.
   * Returns the sweeper's function (grant it what its destinations need, as for the relay).
   */
  addSweeper(
    fnOrOptions?: ConsumerFunctionBase | (SweeperOptions & { readonly prebuilt?: PrebuiltOptions }),
    sweeperOptions?: SweeperOptions,
  ): ConsumerFunctionBase {
    const own = fnOrOptions instanceof ConsumerFunctionBase;
    const options = (own ? sweeperOptions : fnOrOptions) ?? {};
    const fn = own
      ? fnOrOptions
      : new PrebuiltFunction(this, "Sweeper", {
          consumerName: "outbox-sweeper",
          description:
            "Republishes outbox events the relay has not published (reliable-consumers prebuilt sweeper)",
          ...(options as { prebuilt?: PrebuiltOptions }).prebuilt,
          prebuilt: "outboxSweeper",
        });
    this.sweeper = fn;
    const rule = new events.Rule(this, "SweeperSchedule", {
      description: "Republishes outbox events the relay has not published",
      schedule: options.schedule ?? events.Schedule.rate(Duration.minutes(1)),
    });
    this.sweeperSchedule = rule;
    rule.addTarget(
      new targets.LambdaFunction(fn.function, { retryAttempts: 0, maxEventAge: Duration.minutes(1) }),
    );
    const reads = OUTBOX_IAM_ACTIONS.sweeper.filter((a) => a === "dynamodb:Query");
    const writes = OUTBOX_IAM_ACTIONS.sweeper.filter((a) => a !== "dynamodb:Query");
    // The table too: the order check reads each aggregate's previous event (lib/outbox/aggregateOrder.ts;
    // BatchGetItem, among the table's grants, reads it by key).
    this.grantActions(fn.function, reads, [this.pendingIndexArn, this.table.tableArn]);
    this.grantActions(fn.function, writes, [this.table.tableArn]);
    fn.addEnvironment(OUTBOX_ENV.tableName, this.table.tableName);
    if (!this.unnumberedEvents) fn.addEnvironment(OUTBOX_ENV.unnumberedEvents, "false");
    return fn;
  }

  private grantActions(
    grantee: iam.IGrantable,
    actions: readonly string[],
    resourceArns: string[],
  ): iam.Grant {
    const grant = iam.Grant.addToPrincipal({ grantee, actions: [...actions], resourceArns });
    this.table.encryptionKey?.grantEncryptDecrypt(grantee);
    return grant;
  }
}
