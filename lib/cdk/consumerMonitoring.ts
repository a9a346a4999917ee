import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as cwActions from "aws-cdk-lib/aws-cloudwatch-actions";
import type * as sns from "aws-cdk-lib/aws-sns";
import { Construct } from "constructs";
import { METRIC } from "../observability/telemetry.ts";
import type { ConsumerFunctionBase } from "./consumerFunction.ts";
import type { QueueWithDlq } from "./queueWithDlq.ts";

export interface ConsumerMonitoringProps {
  /** The Powertools metrics namespace the functions write to. @default "ReliableConsumers" */
  readonly metricsNamespace?: string;
  /** @default - a name derived from the stack */
  readonly dashboardName?: string;
  /** Notified when any alarm fires. @default - no action */
  readonly alarmTopic?: sns.ITopic;
}

export interface QueueAlarmOptions {
  /** Alarm when the oldest message is older than this. @default 15 minutes */
  readonly maxMessageAge?: Duration;
}

/**
 * Alarms and one dashboard for the signals the principles ask for: DLQ depth > 0, age of the
 * oldest message, outbox pending age, duplicate rate, Kafka OffsetLag, function errors and
 * throttles. The custom metric names come from `lib/observability/telemetry.ts` (`METRIC`).
 */
export class ConsumerMonitoring extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[] = [];
  private readonly namespace: string;
  private readonly alarmTopic: sns.ITopic | undefined;

  constructor(scope: Construct, id: string, props: ConsumerMonitoringProps = {}) {
    super(scope, id);
    this.namespace = props.metricsNamespace ?? "ReliableConsumers";
    this.alarmTopic = props.alarmTopic;
    this.dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      ...(props.dashboardName ? { dashboardName: props.dashboardName } : {}),
      defaultInterval: Duration.hours(3),
    });
  }

  private alarm(id: string, props: cloudwatch.AlarmProps): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, props);
    if (this.alarmTopic) alarm.addAlarmAction(new cwActions.SnsAction(this.alarmTopic));
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

  /** Kafka consumer lag (Lambda's OffsetLag for MSK event sources). */
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
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: `${name}: Kafka OffsetLag`, left: [lag], width: 24 }),
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
