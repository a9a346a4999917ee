import { existsSync } from "node:fs";
import { join } from "node:path";
import { Annotations, Duration, Stack, type StackProps, Validations } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import type { BundlingOptions } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import * as sns from "aws-cdk-lib/aws-sns";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import type { ConsumerFunctionProps, MskClusterRef, RetryLadderDeclaration } from "reliable-consumers/cdk";
import {
  ConsumerFunction,
  ConsumerMonitoring,
  CreatedMskCluster,
  DedupTable,
  KafkaTopics,
  KinesisStream,
  type KinesisTriggerOptions,
  LAMBDA_ENV,
  OutboxTable,
  QueueWithDlq,
  type QueueWithDlqProps,
} from "reliable-consumers/cdk";
import { PROJECT_ROOT } from "../../lib/cdk/functionDefaults.ts";
import { acknowledgeGuardRule, CONTROL_TOWER_RULE } from "../../lib/cdk/guardAcknowledgements.ts";
import type { InfraContext } from "../config.ts";
import { REFERENCE_ENV } from "../referenceEnv.ts";

/**
 * The reference service's functions: its own at `functions/<name>/handler.ts`; the outbox relay and
 * sweeper are the library's prebuilt handlers (`lib/handlers/`).
 */
export const REFERENCE_FUNCTIONS = [
  "order-consumer",
  "report-worker",
  "outbox-relay",
  "outbox-sweeper",
  "payment-consumer",
  "activity-consumer",
] as const;
export type ReferenceFunction = (typeof REFERENCE_FUNCTIONS)[number];

const PREBUILT: Partial<Record<ReferenceFunction, string>> = {
  "outbox-relay": join(PROJECT_ROOT, "lib", "handlers", "outboxRelay.ts"),
  "outbox-sweeper": join(PROJECT_ROOT, "lib", "handlers", "outboxSweeper.ts"),
};

export const defaultEntry = (name: ReferenceFunction): string =>
  PREBUILT[name] ?? join(PROJECT_ROOT, "functions", name, "handler.ts");
export const STUB_ENTRY = join(PROJECT_ROOT, "infra", "stubs", "notImplemented.ts");

/**
 * The reference handlers import the package by its own name (`reliable-consumers/sqs`); this
 * repository's `exports` condition resolves that to lib/ (package.json), so the functions bundle the
 * current sources, not a dist/ that may be stale or absent. Naming a condition drops esbuild's
 * default `module` condition, which the AWS SDK's packages are bundled by, so it is named again.
 * Repository-only: a user's app installs the package and needs neither.
 */
export const SOURCE_BUNDLING = {
  esbuildArgs: { "--conditions": "reliable-consumers-source,module" },
} as const satisfies BundlingOptions;

/** The order-events retry ladder: `.retry.5s` → `.retry.1m` → `.retry.10m` → `.DLQ`. */
export const ORDER_EVENTS_LADDER: RetryLadderDeclaration = {
  topic: "order-events",
  retryDelaysSeconds: [5, 60, 600],
  partitions: 6,
  replicationFactor: 3,
  minInsyncReplicas: 2,
  retentionSeconds: 7 * 86_400,
  retryRetentionSeconds: 7 * 86_400,
  deadLetterRetentionSeconds: 14 * 86_400,
};

export interface ReferenceServiceStackProps extends StackProps {
  readonly context: InfraContext;
  /** Handler files. @default functions/<name>/handler.ts */
  readonly entries?: Partial<Record<ReferenceFunction, string>>;
  /** The Kafka ladder of payment-consumer. @default ORDER_EVENTS_LADDER */
  readonly orderEventsLadder?: RetryLadderDeclaration;
  /** @default DEDUP_DEFAULTS.windowSeconds */
  readonly dedupWindow?: Duration;
  /** Overrides for the orders queue (e.g. an explicit visibility timeout). */
  readonly ordersQueue?: Partial<QueueWithDlqProps>;
  /** @default Duration.seconds(30) */
  readonly orderConsumerTimeout?: Duration;
  /**
   * More topics the relay and the sweeper may publish to (an outbox event names its topic), granted
   * like the main one. @default none
   */
  readonly moreOutboxTopics?: readonly string[];
  /** Overrides for activity-consumer's Kinesis trigger (e.g. fewer retries). @default the trigger's defaults, batches of 100 */
  readonly activityTrigger?: Partial<KinesisTriggerOptions>;
}

/**
 * The reference service of DESIGN.md's data flow: orders queue → order-consumer → app table (inbox +
 * outbox, stream) → outbox-relay → Kafka order-events → payment-consumer (retry ladder), plus the
 * report-worker's long jobs and the outbox sweeper. MSK is referenced through context values, or
 * created with `createMskCluster=true`.
 */
export class ReferenceServiceStack extends Stack {
  readonly cluster: MskClusterRef;
  readonly dedup: DedupTable;
  readonly app: OutboxTable;
  readonly orders: QueueWithDlq;
  readonly reports: QueueWithDlq;
  readonly topics: KafkaTopics;
  readonly functions: Record<ReferenceFunction, ConsumerFunction>;
  readonly monitoring: ConsumerMonitoring;
  readonly parking: sqs.Queue;
  /** The order-activity stream: 2 provisioned shards, so it can be split and merged. */
  readonly activity: KinesisStream;

  constructor(scope: Construct, id: string, props: ReferenceServiceStackProps) {
    super(scope, id, props);
    const ctx = props.context;
    const ladder = props.orderEventsLadder ?? ORDER_EVENTS_LADDER;
    this.cluster = ctx.createMskCluster ? new CreatedMskCluster(this, "Msk").ref : this.referenceCluster(ctx);
    const network = {
      vpc: this.cluster.vpc,
      vpcSubnets: this.cluster.subnets,
      securityGroups: [this.cluster.securityGroup],
    };

    // Tables
    this.dedup = new DedupTable(this, "Dedup", props.dedupWindow ? { window: props.dedupWindow } : {});
    // Created by this stack, written only by numbering units of work (the order consumer's defaults):
    // no unnumbered events, so an order's first (and only) event needs no order read.
    this.app = new OutboxTable(this, "App", { unnumberedEvents: false });

    // Queues: visibility derived from the consumers' timeouts.
    const orderConsumerTimeout = props.orderConsumerTimeout ?? Duration.seconds(30);
    const reportWorkerTimeout = Duration.minutes(5);
    this.orders = new QueueWithDlq(this, "Orders", {
      consumerTimeout: orderConsumerTimeout,
      maxReceiveCount: 5,
      ...props.ordersQueue,
    });
    this.reports = this.reportsQueue(reportWorkerTimeout);
    this.parking = this.parkingQueue();

    this.topics = new KafkaTopics(this, "Topics", { cluster: this.cluster, ladder });

    // Every function runs in the cluster's VPC (AWS Control Tower's CT.LAMBDA.PR.3): the Kafka ones
    // must, and the VPC already reaches DynamoDB and SQS for them, which is all the others need.
    const fn = (name: ReferenceFunction, extra: Partial<ConsumerFunctionProps> = {}) =>
      new ConsumerFunction(this, name, {
        entry: this.entryOf(name, props),
        consumerName: name,
        metricsNamespace: ctx.metricsNamespace,
        ...network,
        ...extra,
        bundling: { ...SOURCE_BUNDLING, ...extra.bundling },
      });

    // orders → order-consumer: inbox marker + order + outbox event in one transaction.
    const orderConsumer = fn("order-consumer", { timeout: orderConsumerTimeout });
    orderConsumer.addSqsTrigger(this.orders, {
      batchSize: 10,
      maxConcurrency: 10,
      queueUrlEnv: REFERENCE_ENV.ordersQueueUrl,
      dlqUrlEnv: REFERENCE_ENV.ordersDlqUrl,
    });
    this.app.addWriter(orderConsumer);
    // Its outbox events are addressed to the ladder's main topic (`kafka:<topic>`).
    orderConsumer.addEnvironment(LAMBDA_ENV.kafkaTopic, ladder.topic);

    // reports → report-worker: one long job at a time, heartbeat extends visibility and the dedup lease.
    const reportWorker = this.reportWorker(
      fn("report-worker", { timeout: reportWorkerTimeout, memorySize: 1024 }),
    );

    // app table stream → outbox-relay → Kafka; the sweeper republishes what the relay missed.
    const { relay, sweeper } = this.outboxFunctions(fn, ladder.topic, props.moreOutboxTopics ?? []);

    // order-events → payment-consumer with its retry ladder.
    const payment = this.paymentConsumer(fn("payment-consumer", { timeout: Duration.minutes(1) }), ladder);

    // order-activity stream → activity-consumer: inbox marker + per-customer head + record item.
    this.activity = new KinesisStream(this, "OrderActivity", { shardCount: 2 });
    const activityConsumer = fn("activity-consumer", { timeout: Duration.seconds(30) });
    activityConsumer.addKinesisTrigger(this.activity, { batchSize: 100, ...props.activityTrigger });
    this.app.addWriter(activityConsumer);

    this.functions = {
      "order-consumer": orderConsumer,
      "report-worker": reportWorker,
      "outbox-relay": relay,
      "outbox-sweeper": sweeper,
      "payment-consumer": payment,
      "activity-consumer": activityConsumer,
    };

    this.monitoring = this.alarmsAndDashboard(ctx, payment);

    this.acknowledgeLogGroupControls();
  }

  /**
   * Long jobs: the heartbeat keeps a running job hidden, so the queue's visibility timeout can be
   * the function timeout, and a crashed job comes back after 5 minutes instead of 6 × 5.
   */
  private reportsQueue(reportWorkerTimeout: Duration): QueueWithDlq {
    return new QueueWithDlq(this, "Reports", {
      consumerTimeout: reportWorkerTimeout,
      visibilityHeartbeat: true,
      maxReceiveCount: 3,
    });
  }

  /** The payment consumer: the MSK trigger with its retry ladder, its dedup table. */
  /** report-worker on the reports queue: its dedup store, and the app table it stores reports in. */
  private reportWorker(reportWorker: ConsumerFunction): ConsumerFunction {
    reportWorker.addSqsTrigger(this.reports, {
      batchSize: 1,
      maxConcurrency: 2,
      queueUrlEnv: REFERENCE_ENV.reportQueueUrl,
    });
    this.dedup.grantDedup(reportWorker.function);
    this.app.grantUnitOfWork(reportWorker.function); // it stores the finished report in the app table
    reportWorker
      .addEnvironment(LAMBDA_ENV.appTableName, this.app.tableName)
      .addEnvironment(LAMBDA_ENV.dedupTableName, this.dedup.tableName)
      .addEnvironment(LAMBDA_ENV.dedupWindowSeconds, String(this.dedup.window.toSeconds()))
      .useDedupWindow(this.dedup);
    return reportWorker;
  }

  private paymentConsumer(payment: ConsumerFunction, ladder: RetryLadderDeclaration): ConsumerFunction {
    const mappings = payment.addMskTrigger(this.cluster, ladder, { batchSize: 100 });
    for (const m of mappings) m.node.addDependency(this.topics);
    this.dedup.grantDedup(payment.function);
    return payment
      .addEnvironment(LAMBDA_ENV.dedupTableName, this.dedup.tableName)
      .addEnvironment(LAMBDA_ENV.dedupWindowSeconds, String(this.dedup.window.toSeconds()))
      .useDedupWindow(this.dedup);
  }

  /** Alarms and dashboard. */
  private alarmsAndDashboard(ctx: InfraContext, payment: ConsumerFunction): ConsumerMonitoring {
    const monitoring = new ConsumerMonitoring(this, "Monitoring", {
      metricsNamespace: ctx.metricsNamespace,
      ...(ctx.alarmTopicArn
        ? { alarmTopic: sns.Topic.fromTopicArn(this, "AlarmTopic", ctx.alarmTopicArn) }
        : {}),
    });
    monitoring.monitorQueue("Orders", this.orders);
    monitoring.monitorQueue("Reports", this.reports, { maxMessageAge: Duration.hours(1) });
    for (const f of Object.values(this.functions)) monitoring.monitorFunction(f);
    monitoring.monitorKafkaLag(payment);
    monitoring.monitorOutbox("outbox-sweeper");
    return monitoring;
  }

  /** A function's entry; a missing one is a synth error, or a stub with a warning when the context allows it. */
  private entryOf(name: ReferenceFunction, props: ReferenceServiceStackProps): string {
    const path = props.entries?.[name] ?? defaultEntry(name);
    if (existsSync(path)) return path;
    if (!props.context.allowMissingHandlers) {
      throw new Error(
        `${name}: handler ${path} does not exist (set context allowMissingHandlers=true to deploy a stub)`,
      );
    }
    Annotations.of(this).addWarningV2(
      `reference:missing-handler:${name}`,
      `${name}: ${path} does not exist yet; deploying a stub that fails every invocation.`,
    );
    return STUB_ENTRY;
  }

  /** Where the relay and the sweeper park events that can never be published. */
  private parkingQueue(): sqs.Queue {
    const parking = new sqs.Queue(this, "OutboxParking", {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(parking).acknowledge({
      id: "AwsSolutions-SQS3",
      reason:
        "The outbox parking queue is itself a dead-letter destination: events that fail permanently are parked " +
        "here with their context for a fix and a replay; it is not consumed by a trigger.",
    });
    acknowledgeGuardRule(
      parking,
      CONTROL_TOWER_RULE.sqsDeadLetterQueue,
      "The outbox parking queue is itself a dead-letter destination, written with SendMessage by the relay and " +
        "sweeper (not by an SQS redrive); it is not consumed by a trigger, so it needs no DLQ, and no queue " +
        "redrives into it, so a redrive-allow policy would name no source.",
    );
    return parking;
  }

  /** The relay and the sweeper: they publish to the main topic and park in the parking queue. */
  private outboxFunctions(
    fn: (name: ReferenceFunction, extra: Partial<ConsumerFunctionProps>) => ConsumerFunction,
    topic: string,
    more: readonly string[],
  ): { relay: ConsumerFunction; sweeper: ConsumerFunction } {
    const relay = fn("outbox-relay", { timeout: Duration.minutes(1) });
    this.app.addRelay(relay);
    relay.produceTo(this.cluster, [topic, ...more]).addEnvironment(LAMBDA_ENV.kafkaTopic, topic);
    const sweeper = fn("outbox-sweeper", { timeout: Duration.minutes(1) });
    this.app.addSweeper(sweeper);
    sweeper.produceTo(this.cluster, [topic, ...more]).addEnvironment(LAMBDA_ENV.kafkaTopic, topic);
    for (const f of [relay, sweeper]) {
      this.parking.grantSendMessages(f.function);
      f.addEnvironment(LAMBDA_ENV.outboxParkingQueueUrl, this.parking.queueUrl);
    }
    return { relay, sweeper };
  }

  /**
   * The log groups keep CloudWatch Logs' defaults (1 month to 1 week, CloudWatch's own encryption at
   * rest): a choice of this reference service, acknowledged here per log group. ConsumerFunction's
   * `logRetention` and `logEncryptionKey` meet CT.CLOUDWATCH.PR.2 and PR.3 where an organisation
   * requires them.
   */
  private acknowledgeLogGroupControls(): void {
    for (const c of this.node.findAll()) {
      if (!(c instanceof logs.LogGroup)) continue;
      acknowledgeGuardRule(
        c,
        CONTROL_TOWER_RULE.logGroupRetention,
        "The reference service keeps function, broker and flow logs for a week to a month to keep storage " +
          "costs low; set ConsumerFunction logRetention to ONE_YEAR or more where a retention policy requires it.",
      );
      acknowledgeGuardRule(
        c,
        CONTROL_TOWER_RULE.logGroupEncryption,
        "CloudWatch Logs encrypts these log groups at rest with its own keys; the logs hold no payloads (the " +
          "library logs ids and error types). Give ConsumerFunction logEncryptionKey where a customer-managed " +
          "key is required.",
      );
    }
  }

  private referenceCluster(ctx: InfraContext): MskClusterRef {
    const vpc = ec2.Vpc.fromVpcAttributes(this, "Vpc", {
      vpcId: ctx.vpcId,
      availabilityZones: ctx.availabilityZones,
      privateSubnetIds: ctx.privateSubnetIds,
    });
    Validations.of(this).acknowledge({
      id: "Annotation::@aws-cdk/aws-ec2:noSubnetRouteTableId",
      reason: "The subnets are referenced by id only to place functions in them; no route table is read.",
    });
    return {
      clusterArn: ctx.mskClusterArn,
      bootstrapBrokers: ctx.mskBootstrapBrokers,
      kind: ctx.mskClusterKind,
      iamAuth: ctx.mskIamAuth,
      vpc,
      subnets: {
        subnets: ctx.privateSubnetIds.map((id, i) => ec2.Subnet.fromSubnetId(this, `Subnet${i}`, id)),
      },
      securityGroup: ec2.SecurityGroup.fromSecurityGroupId(this, "MskClientSg", ctx.mskSecurityGroupId, {
        mutable: false,
      }),
    };
  }
}
