import { Duration, RemovalPolicy } from "aws-cdk-lib";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import {
  ConsumerRuleError,
  formatSeconds,
  requiredVisibilityTimeoutSeconds,
  sqsRetryPathSeconds,
} from "./rules.ts";

export interface QueueWithDlqProps {
  /** @default - a CloudFormation-generated name */
  readonly queueName?: string;
  /** A FIFO queue (and DLQ): order per message group, batches of at most 10. @default false */
  readonly fifo?: boolean;
  /**
   * The timeout of the function that will consume the queue. The visibility timeout defaults to
   * 6 × this + `maxBatchingWindow`, the rule the consumer checks at synth.
   * @default - required unless `visibilityTimeout` is given
   */
  readonly consumerTimeout?: Duration;
  /** The consumer's batching window, added to the derived visibility timeout. @default Duration.seconds(0) */
  readonly maxBatchingWindow?: Duration;
  /** An explicit visibility timeout. Checked against the consumer at synth. @default - derived from `consumerTimeout` */
  readonly visibilityTimeout?: Duration;
  /** Receives before a message is moved to the DLQ. @default 5 */
  readonly maxReceiveCount?: number;
  /** @default Duration.days(4) */
  readonly retentionPeriod?: Duration;
  /**
   * DLQ retention: the time you have to fix and redrive. Must be ≥ the source's retention, because on
   * a standard queue the expiry counts from the original enqueue time. @default Duration.days(14)
   */
  readonly dlqRetentionPeriod?: Duration;
  /**
   * Replays planned after the DLQ retention (e.g. from an archive), counted in the dedup window
   * check of the consumers of this queue. @default Duration.seconds(0)
   */
  readonly plannedReplay?: Duration;
  /** A customer-managed KMS key for both queues. @default - SQS-managed encryption (SSE-SQS) */
  readonly encryptionKey?: kms.IKey;
  /** @default RemovalPolicy.DESTROY (messages are transient; the DLQ alarm fires before you delete a stack) */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * An SQS queue with its redrive DLQ: encrypted, SSL-only, with the visibility timeout derived from
 * the consumer's timeout. The consumer (`ConsumerFunction.addSqsTrigger`) checks the 6× rule again
 * against its real timeout and batching window, so a mismatch fails synth.
 */
export class QueueWithDlq extends Construct {
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly fifo: boolean;
  readonly maxReceiveCount: number;
  readonly visibilityTimeout: Duration;
  readonly retentionPeriod: Duration;
  readonly dlqRetentionPeriod: Duration;
  readonly plannedReplay: Duration;

  constructor(scope: Construct, id: string, props: QueueWithDlqProps) {
    super(scope, id);
    this.fifo = props.fifo ?? false;
    this.maxReceiveCount = props.maxReceiveCount ?? 5;
    this.retentionPeriod = props.retentionPeriod ?? Duration.days(4);
    this.dlqRetentionPeriod = props.dlqRetentionPeriod ?? Duration.days(14);
    this.plannedReplay = props.plannedReplay ?? Duration.seconds(0);
    if (this.maxReceiveCount < 1 || !Number.isInteger(this.maxReceiveCount)) {
      throw new ConsumerRuleError(
        `${this.node.path}: maxReceiveCount must be an integer ≥ 1, got ${this.maxReceiveCount}`,
      );
    }
    if (!this.fifo && this.dlqRetentionPeriod.toSeconds() < this.retentionPeriod.toSeconds()) {
      throw new ConsumerRuleError(
        `${this.node.path}: DLQ retention (${formatSeconds(this.dlqRetentionPeriod.toSeconds())}) is shorter than the ` +
          `queue's (${formatSeconds(this.retentionPeriod.toSeconds())}). On a standard queue a message's expiry counts ` +
          `from its original enqueue time, so dead-lettered messages would expire almost at once.`,
      );
    }
    if (props.visibilityTimeout) {
      this.visibilityTimeout = props.visibilityTimeout;
    } else if (props.consumerTimeout) {
      const window = props.maxBatchingWindow?.toSeconds() ?? 0;
      this.visibilityTimeout = Duration.seconds(
        requiredVisibilityTimeoutSeconds(props.consumerTimeout.toSeconds(), window),
      );
    } else {
      throw new ConsumerRuleError(
        `${this.node.path}: give consumerTimeout (the consuming function's timeout) so the visibility timeout can be ` +
          `derived from it, or an explicit visibilityTimeout.`,
      );
    }

    const encryption = props.encryptionKey
      ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: props.encryptionKey }
      : { encryption: sqs.QueueEncryption.SQS_MANAGED };
    const suffix = this.fifo ? ".fifo" : "";
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.DESTROY;

    this.deadLetterQueue = new sqs.Queue(this, "Dlq", {
      ...(props.queueName ? { queueName: `${props.queueName}-dlq${suffix}` } : {}),
      fifo: this.fifo || undefined,
      retentionPeriod: this.dlqRetentionPeriod,
      enforceSSL: true,
      removalPolicy,
      ...encryption,
    });
    this.queue = new sqs.Queue(this, "Queue", {
      ...(props.queueName ? { queueName: `${props.queueName}${suffix}` } : {}),
      fifo: this.fifo || undefined,
      visibilityTimeout: this.visibilityTimeout,
      retentionPeriod: this.retentionPeriod,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: this.maxReceiveCount },
      enforceSSL: true,
      removalPolicy,
      ...encryption,
    });
  }

  /** How long after its first send a message can still reach a consumer of this queue. */
  get retryPathSeconds(): number {
    return sqsRetryPathSeconds({
      retentionSeconds: this.retentionPeriod.toSeconds(),
      dlqRetentionSeconds: this.dlqRetentionPeriod.toSeconds(),
      fifo: this.fifo,
      plannedReplaySeconds: this.plannedReplay.toSeconds(),
    });
  }

  get retryPathDescription(): string {
    const f = (d: Duration) => formatSeconds(d.toSeconds());
    const combine = this.fifo
      ? "retention + DLQ retention (FIFO resets the enqueue time)"
      : "max(retention, DLQ retention)";
    return (
      `queue ${this.node.id}: ${combine} with retention ${f(this.retentionPeriod)}, DLQ ${f(this.dlqRetentionPeriod)}` +
      (this.plannedReplay.toSeconds() > 0 ? `, planned replay ${f(this.plannedReplay)}` : "")
    );
  }

  /** Send to the queue (producers). */
  grantSend(grantee: iam.IGrantable): iam.Grant {
    return this.queue.grantSendMessages(grantee);
  }

  /**
   * What a heartbeat needs besides the trigger's own grants: ChangeMessageVisibility on the queue
   * (the trigger grants it too; this is for workers that extend visibility outside a trigger).
   */
  grantChangeVisibility(grantee: iam.IGrantable): iam.Grant {
    return this.queue.grant(grantee, "sqs:ChangeMessageVisibility");
  }

  /** Park permanent failures in the DLQ at once, with their failure context. */
  grantSendToDeadLetterQueue(grantee: iam.IGrantable): iam.Grant {
    return this.deadLetterQueue.grantSendMessages(grantee);
  }

  /** Read and delete from the DLQ: for a redrive/replay tool. */
  grantConsumeDeadLetterQueue(grantee: iam.IGrantable): iam.Grant {
    return this.deadLetterQueue.grantConsumeMessages(grantee);
  }
}
