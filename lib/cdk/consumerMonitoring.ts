import { Duration, Stack } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as cwActions from "aws-cdk-lib/aws-cloudwatch-actions";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as sns from "aws-cdk-lib/aws-sns";
import { Construct } from "constructs";
import { METRIC } from "../observability/telemetry.ts";
import type { ConsumerFunctionBase } from "./consumerFunctionBase.ts";
import type { QueueWithDlq } from "./queueWithDlq.ts";

/** Props of `ConsumerMonitoring`. */
export interface ConsumerMonitoringProps {
  /** The Powertools metrics namespace the functions write to. @default "ReliableConsumers" */
  readonly metricsNamespace?: string;
  /** The dashboard's name (letters, digits, `-`, `_`; up to 255). @default - a name derived from the stack */
  readonly dashboardName?: string;
  /**
   * Every alarm notifies this topic when it fires and when it is OK again. An alarm that notifies
   * nobody is decoration (AWS Control Tower's CT.CLOUDWATCH.PR.1 refuses it). A given topic must let
   * CloudWatch publish (and, if encrypted, let `cloudwatch.amazonaws.com` use its key).
   * @default - a new topic, encrypted with a new customer-managed KMS key (rotated) and TLS-only;
   * subscribe your on-call to `alarmTopic`
   */
  readonly alarmTopic?: sns.ITopic;
}

/** The alarms on one queue. */
export interface QueueAlarmOptions {
  /** Alarm when the oldest message is older than this (1 min–14 days). @default Duration.minutes(15) */
  readonly maxMessageAge?: Duration;
}

/**
 * Alarms and one dashboard for the signals the principles ask for: DLQ depth > 0, age of the
 * oldest message, outbox pending age, duplicate rate, Kafka OffsetLag, function errors and
 * throttles. The custom metric names come from `lib/observability/telemetry.ts` (`METRIC`). Every
 * alarm notifies `alarmTopic` (given, or created encrypted and TLS-only).
 */
export class ConsumerMonitoring extends Construct {
  /** The dashboard the `monitor*` methods add their widgets to. */
  readonly dashboard: cloudwatch.Dashboard;
  /** Every alarm the `monitor*` methods created so far, each notifying `alarmTopic`. */
  readonly alarms: cloudwatch.Alarm[] = [];
  /** Where every alarm goes: subscribe on-call (email, chat, paging) to it. */
  readonly alarmTopic: sns.ITopic;
  /** The key of the created topic. @default - none when the topic was given */
  readonly alarmTopicKey?: kms.Key;
  private readonly namespace: string;

  /**
   * Creates the dashboard and the alarm topic (unless given); add what to watch with the `monitor*` methods.
   */
  constructor(scope: Construct, id: string, props: ConsumerMonitoringProps = {}) {
    super(scope, id);
    this.namespace = props.metricsNamespace ?? "ReliableConsumers";
    if (props.alarmTopic) {
      this.alarmTopic = props.alarmTopic;
    } else {
      // CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key; it needs a
      // customer-managed key whose policy lets it encrypt.
      const key = new kms.Key(this, "AlarmTopicKey", {
        description: "Encrypts the alarm topic of ConsumerMonitoring",
        enableKeyRotation: true,
      });
      key.addToResourcePolicy(
        new iam.PolicyStatement({
          principals: [new iam.ServicePrincipal("cloudwatch.amazonaws.com")],
          actions: ["kms:Decrypt", "kms:GenerateDataKey*"],
          resources: ["*"],
          conditions: { StringEquals: { "aws:SourceAccount": Stack.of(this).account } },
        }),
      );
      // Grants on the key are for AWS services only (AWS Control Tower's CT.KMS.PR.3).
      key.addToResourcePolicy(
        new iam.PolicyStatement({
          effect: iam.Effect.DENY,
          principals: [new iam.AnyPrincipal()],
          actions: ["kms:CreateGrant"],
          resources: ["*"],
          conditions: {
            BoolIfExists: { "kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false" },
          },
        }),
      );
      const topic = new sns.Topic(this, "AlarmTopic", {
        displayName: "Consumer alarms",
        masterKey: key,
        enforceSSL: true,
      });
      // A topic policy replaces SNS's default one: let CloudWatch alarms of this account publish.
      topic.addToResourcePolicy(
        new iam.PolicyStatement({
          principals: [new iam.ServicePrincipal("cloudwatch.amazonaws.com")],
          actions: ["sns:Publish"],
          resources: [topic.topicArn],
          conditions: { StringEquals: { "aws:SourceAccount": Stack.of(this).account } },
        }),
      );
      this.alarmTopic = topic;
      this.alarmTopicKey = key;
    }
    this.dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      ...(props.dashboardName ? { dashboardName: props.dashboardName } : {}),
      defaultInterval: Duration.hours(3),
    });
  }

  private alarm(id: string, props: cloudwatch.AlarmProps): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, props);
    const action = new cwActions.SnsAction(this.alarmTopic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.alarms.push(alarm);
    return alarm;
  }

  /** DLQ depth > 0 and the age of the oldest message in the source queue. */
  monitorQueue(name: string, q: QueueWithDlq, options: QueueAlarmOptions = {}): void {
    const dlqDepth = q.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
      period: Duration.minutes(1),
      statistic: "Maximum",
    });
    const age = q.queue.metricApproximateAgeOfOldestMessage({
      period: Duration.minutes(1),
      statistic: "Maximum",
    });
    const maxAge = options.maxMessageAge ?? Duration.minutes(15);
    this.alarm(`${name}DlqNotEmpty`, {
      alarmDescription: `${name}: messages in the DLQ. Inspect, fix, then redrive.`,
      metric: dlqDepth,
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.alarm(`${name}OldestMessageAge`, {
      alarmDescription: `${name}: the oldest message is older than ${maxAge.toHumanString()}; consumers fall behind.`,
      metric: age,
      threshold: maxAge.toSeconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 5,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: `${name}: DLQ depth`, left: [dlqDepth], width: 12 }),
      new cloudwatch.GraphWidget({ title: `${name}: age of oldest message (s)`, left: [age], width: 12 }),
    );
  }

  /** Errors and throttles of a function, and the rate of duplicates it dropped. */
  monitorFunction(consumer: ConsumerFunctionBase): void {
    const name = consumer.consumerName;
    const fn = consumer.function;
    const errors = fn.metricErrors({ period: Duration.minutes(1), statistic: "Sum" });
    const throttles = fn.metricThrottles({ period: Duration.minutes(1), statistic: "Sum" });
    this.alarm(`${name}Errors`, {
      alarmDescription: `${name}: function errors (crashes or timeouts; record failures are reported per item).`,
      metric: errors,
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.alarm(`${name}Throttles`, {
      alarmDescription: `${name}: throttled invocations.`,
      metric: throttles,
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const duplicates = this.custom(name, METRIC.duplicates, "Sum");
    const processed = this.custom(name, METRIC.processed, "Sum");
    const duplicateRate = new cloudwatch.MathExpression({
      expression: "IF(p > 0, 100 * d / p, 0)",
      usingMetrics: { d: duplicates, p: processed },
      label: `${name}: duplicates dropped (%)`,
      period: Duration.minutes(5),
    });
    this.alarm(`${name}DuplicateRate`, {
      alarmDescription: `${name}: more than 20 % of messages are duplicates; a producer or ack path is retrying hard.`,
      metric: duplicateRate,
      threshold: 20,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: `${name}: errors and throttles`,
        left: [errors, throttles],
        width: 12,
      }),
      new cloudwatch.GraphWidget({ title: `${name}: duplicate rate (%)`, left: [duplicateRate], width: 12 }),
    );
  }

  /**
   * Kafka consumer lag (Lambda's OffsetLag for MSK event sources), in records (≥ 1), and records
   * held back because their schema registry could not answer (`SchemaRegistryUnavailable`): such
   * records go round the retry ladder without using an attempt, never to the dead-letter topic, so
   * only this alarm tells someone that the registry is down or misconfigured. @default maxLag 10,000
   */
  monitorKafkaLag(consumer: ConsumerFunctionBase, maxLag = 10_000): void {
    const name = consumer.consumerName;
    const lag = new cloudwatch.Metric({
      namespace: "AWS/Lambda",
      metricName: "OffsetLag",
      dimensionsMap: { FunctionName: consumer.function.functionName },
      statistic: "Maximum",
      period: Duration.minutes(1),
    });
    this.alarm(`${name}OffsetLag`, {
      alarmDescription: `${name}: Kafka offset lag above ${maxLag}; consume rate < produce rate.`,
      metric: lag,
      threshold: maxLag,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 10,
      datapointsToAlarm: 8,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const registryDown = this.custom(name, METRIC.schemaRegistryUnavailable, "Sum");
    this.alarm(`${name}SchemaRegistryUnavailable`, {
      alarmDescription:
        `${name}: records wait because the schema registry cannot answer (unreachable, access denied, ` +
        "or a URL / registry name that does not exist). They are retried, never dead-lettered: fix the registry or its configuration.",
      metric: registryDown,
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: `${name}: Kafka OffsetLag`, left: [lag], width: 12 }),
      new cloudwatch.GraphWidget({
        title: `${name}: records waiting for the schema registry`,
        left: [registryDown],
        width: 12,
      }),
    );
  }

  /**
   * Outbox health: pending count and the age of the oldest pending event, as reported by the
   * sweeper (`service` is its POWERTOOLS_SERVICE_NAME). A rising age means the relay is broken.
   */
  monitorOutbox(service: string, maxPendingAge: Duration = Duration.minutes(15)): void {
    const age = this.custom(service, METRIC.outboxOldestAgeMs, "Maximum");
    const pending = this.custom(service, METRIC.outboxPending, "Maximum");
    this.alarm("OutboxPendingAge", {
      alarmDescription: `Outbox: the oldest unpublished event is older than ${maxPendingAge.toHumanString()}; the relay is stuck.`,
      metric: age,
      threshold: maxPendingAge.toMilliseconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      // No data: nothing pending, or the sweeper is down (its own error alarm covers that).
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: "Outbox: oldest pending event (ms)", left: [age], width: 12 }),
      new cloudwatch.GraphWidget({ title: "Outbox: pending events", left: [pending], width: 12 }),
    );
  }

  private custom(service: string, metricName: string, statistic: string): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: this.namespace,
      metricName,
      dimensionsMap: { service },
      statistic,
      period: Duration.minutes(5),
    });
  }
}
