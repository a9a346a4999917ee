import { ArnFormat, Duration, Names, RemovalPolicy, Stack, Token } from "aws-cdk-lib";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { minimumHeartbeatVisibilitySeconds } from "../sqs/heartbeatDefaults.ts";
import { SQS_LIMITS } from "../sqs/sqsLimits.ts";
import { ConsumerRuleError, formatSeconds } from "./rules/ruleError.ts";
import {
  checkQueueName,
  checkQueueWithDlq,
  DLQ_NAME_SUFFIX,
  FIFO_NAME_SUFFIX,
  requiredVisibilityTimeoutSeconds,
  SQS_TRIGGER_LIMITS,
  sqsRetryPathSeconds,
} from "./rules/sqsRules.ts";

/** Props of `QueueWithDlq`. */
export interface QueueWithDlqProps {
  /**
   * The queue's name; the DLQ is `<name>-dlq` (`.fifo` is appended on FIFO queues). Letters,
   * digits, `-`, `_`; at most 76 characters, 71 on a FIFO queue, so that the DLQ's name fits SQS's
   * 80 too (checked at synth: `QueueNameTooLong`, `QueueNameInvalid`).
   * @default - a name unique to this construct's path (the DLQ's redrive-allow policy names the
   * queue's ARN, which a CloudFormation-generated name would make circular)
   */
  readonly queueName?: string;
  /**
   * A FIFO queue (and DLQ): order per message group, batches of at most 10. A standard queue whose
   * producers set `MessageGroupId` is a fair queue (SQS, July 2025; no setting here): the group id
   * names a tenant, whose backlog SQS keeps from delaying the other tenants, with neither order nor
   * deduplication. The consumer treats its records as standard ones (no group lanes, backoff
   * through visibility, a healthy record requeued on its last receive) and keeps the tenant on
   * every copy it sends (a requeued copy, a parked letter, a redrive). Dedup stays key-based: a
   * standard queue delivers at least once and has no `MessageDeduplicationId`, so the dedup store
   * is the only dedup, under the consumer's `key` (a business key), never the tenant; if two
   * tenants can share a business id, make the tenant part of the key
   * (`` key: (b, r) => `${r.attributes.MessageGroupId}:${b.id}` ``).
   * @default false
   */
  readonly fifo?: boolean;
  /**
   * The timeout of the function that will consume the queue (1 s–15 min). The visibility timeout
   * defaults to 6 × this + `maxBatchingWindow`, the rule the consumer checks at synth (≤ 12 h), or,
   * with `visibilityHeartbeat`, to the shorter timeout the heartbeat needs.
   * @default - required unless `visibilityTimeout` is given
   */
  readonly consumerTimeout?: Duration;
  /** The consumer's batching window (0–5 min), added to the derived visibility timeout. @default Duration.seconds(0) */
  readonly maxBatchingWindow?: Duration;
  /**
   * An explicit visibility timeout (0 s–12 h). Checked against the consumer at synth.
   * @default - derived from `consumerTimeout` (or `visibilityHeartbeat`)
   */
  readonly visibilityTimeout?: Duration;
  /**
   * Size the queue for the library's visibility heartbeat instead of Lambda's 6 × timeout rule: a
   * visibility timeout of `minimumHeartbeatVisibilitySeconds` (the function timeout, Lambda's own
   * minimum, or 3 × (batching window + 10 s) if longer), which the heartbeat extends a third of the
   * way in for as long as the consumer works on a record. A crashed invocation's records then come
   * back after one function timeout instead of six. The consumer must keep the heartbeat on (the
   * default of `sqsConsumer`); `addSqsTrigger` checks the visibility timeout against this rule.
   * @default false
   */
  readonly visibilityHeartbeat?: boolean;
  /**
   * Receives before SQS moves a message to the DLQ (1–1000; FIFO ≥ `MIN_FIFO_RECEIVE_COUNT`, 3).
   * The consumer parks a failing record itself, with its context, on its last receive.
   * @default 5
   */
  readonly maxReceiveCount?: number;
  /** How long the queue keeps a message (1 min–14 days). @default Duration.days(4) */
  readonly retentionPeriod?: Duration;
  /**
   * DLQ retention (1 min–14 days): the time you have to fix and redrive. On a standard queue it must
   * be ≥ the source's retention, because SQS's own move to the DLQ keeps the original enqueue time.
   * @default Duration.days(14)
   */
  readonly dlqRetentionPeriod?: Duration;
  /**
   * Replays planned after the DLQ retention (e.g. from an archive), counted in the dedup window
   * check of the consumers of this queue (≥ 0). @default Duration.seconds(0)
   */
  readonly plannedReplay?: Duration;
  /** A customer-managed KMS key for both queues. @default - SQS-managed encryption (SSE-SQS) */
  readonly encryptionKey?: kms.IKey;
  /**
   * What deleting the stack does to both queues.
   * @default RemovalPolicy.DESTROY (messages are transient; the DLQ alarm fires before you delete a stack)
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * An SQS queue with its redrive DLQ: encrypted, SSL-only, with the visibility timeout derived from
 * the consumer's timeout (or sized for the visibility heartbeat). The DLQ's redrive-allow policy
 * admits only this queue as its source. The consumer (`ConsumerFunction.addSqsTrigger`) checks the
 * visibility rule again against its real timeout and batching window, so a mismatch fails synth.
 */
export class QueueWithDlq extends Construct {
  /** The source queue, encrypted and SSL-only, redriving to `deadLetterQueue`. */
  readonly queue: sqs.Queue;
  /** The DLQ: admits only `queue` as its source. */
  readonly deadLetterQueue: sqs.Queue;
  /** Both queues are FIFO. */
  readonly fifo: boolean;
  /** Receives before SQS moves a message to the DLQ (a count). */
  readonly maxReceiveCount: number;
  /** The queue's visibility timeout: given, or derived from the consumer's timeout. */
  readonly visibilityTimeout: Duration;
  /** The queue is sized for the visibility heartbeat (see `QueueWithDlqProps.visibilityHeartbeat`). */
  readonly visibilityHeartbeat: boolean;
  /** How long the queue keeps a message. */
  readonly retentionPeriod: Duration;
  /** How long the DLQ keeps a message. */
  readonly dlqRetentionPeriod: Duration;
  /** Replays planned after the DLQ retention, counted in the dedup window check. */
  readonly plannedReplay: Duration;

  /**
   * Creates the queue and its DLQ; throws `ConsumerRuleError` when the settings break a rule (or
   * neither `consumerTimeout` nor `visibilityTimeout` is given).
   */
  constructor(scope: Construct, id: string, props: QueueWithDlqProps) {
    super(scope, id);
    this.fifo = props.fifo ?? false;
    this.maxReceiveCount = props.maxReceiveCount ?? 5;
    this.retentionPeriod = props.retentionPeriod ?? Duration.days(4);
    this.dlqRetentionPeriod = props.dlqRetentionPeriod ?? Duration.days(14);
    this.plannedReplay = props.plannedReplay ?? Duration.seconds(0);
    this.visibilityHeartbeat = props.visibilityHeartbeat ?? false;
    if (props.queueName !== undefined)
      checkQueueName({ queueName: props.queueName, fifo: this.fifo, path: this.node.path });
    checkQueueWithDlq({
      fifo: this.fifo,
      maxReceiveCount: this.maxReceiveCount,
      retentionSeconds: this.retentionPeriod.toSeconds(),
      dlqRetentionSeconds: this.dlqRetentionPeriod.toSeconds(),
      path: this.node.path,
    });
    const window = props.maxBatchingWindow?.toSeconds() ?? 0;
    if (props.visibilityTimeout) {
      this.visibilityTimeout = props.visibilityTimeout;
    } else if (props.consumerTimeout && this.visibilityHeartbeat) {
      // A window that is a token is unknown here: size for the longest window Lambda allows.
      const known = Token.isUnresolved(window) ? SQS_TRIGGER_LIMITS.maxBatchingWindowSeconds : window;
      this.visibilityTimeout = Duration.seconds(
        minimumHeartbeatVisibilitySeconds(props.consumerTimeout.toSeconds(), known),
      );
    } else if (props.consumerTimeout) {
      this.visibilityTimeout = Duration.seconds(
        requiredVisibilityTimeoutSeconds(props.consumerTimeout.toSeconds(), window),
      );
    } else {
      throw new ConsumerRuleError(
        "VisibilityTimeoutUnknown",
        "give consumerTimeout (the consuming function's timeout) so the visibility timeout can be " +
          "derived from it, or an explicit visibilityTimeout.",
        this.node.path,
      );
    }

    const encryption = props.encryptionKey
      ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: props.encryptionKey }
      : { encryption: sqs.QueueEncryption.SQS_MANAGED };
    const suffix = this.fifo ? FIFO_NAME_SUFFIX : "";
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.DESTROY;
    // The DLQ admits only this queue (redrive-allow policy by queue). Naming the queue here keeps
    // its ARN known without a reference, which would be circular (the queue's redrive policy
    // references the DLQ).
    // A generated name leaves the DLQ unnamed (CloudFormation names it), so it only has to fit
    // itself with `.fifo`: 75 for both kinds, as it always was (a new length would rename queues).
    const generated = () =>
      Names.uniqueResourceName(this, {
        maxLength: SQS_LIMITS.maxQueueNameLength - FIFO_NAME_SUFFIX.length,
        separator: "-",
        allowedSpecialCharacters: "-_",
      });
    const queueName = `${props.queueName ?? generated()}${suffix}`;
    const queueArn = Stack.of(this).formatArn({
      service: "sqs",
      resource: queueName,
      arnFormat: ArnFormat.NO_RESOURCE_NAME,
    });

    this.deadLetterQueue = new sqs.Queue(this, "Dlq", {
      ...(props.queueName ? { queueName: `${props.queueName}${DLQ_NAME_SUFFIX}${suffix}` } : {}),
      fifo: this.fifo || undefined,
      retentionPeriod: this.dlqRetentionPeriod,
      enforceSSL: true,
      removalPolicy,
      redriveAllowPolicy: {
        redrivePermission: sqs.RedrivePermission.BY_QUEUE,
        sourceQueues: [sqs.Queue.fromQueueArn(this, "Source", queueArn)],
      },
      ...encryption,
    });
    this.queue = new sqs.Queue(this, "Queue", {
      queueName,
      fifo: this.fifo || undefined,
      visibilityTimeout: this.visibilityTimeout,
      retentionPeriod: this.retentionPeriod,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: this.maxReceiveCount },
      enforceSSL: true,
      removalPolicy,
      ...encryption,
    });
  }

  /**
   * How long after its first send a message can still reach a consumer of this queue: retention +
   * DLQ retention (a copy parked with SendMessage) + retention (that copy redriven), plus the
   * planned replay. `undefined` when a duration is a token.
   */
  get retryPathSeconds(): number | undefined {
    return sqsRetryPathSeconds({
      retentionSeconds: this.retentionPeriod.toSeconds(),
      dlqRetentionSeconds: this.dlqRetentionPeriod.toSeconds(),
      plannedReplaySeconds: this.plannedReplay.toSeconds(),
    });
  }

  /** `retryPathSeconds` in words, e.g. `queue orders: retention 4d + parked in the DLQ 14d + redriven 4d`. */
  get retryPathDescription(): string {
    const f = (d: Duration) => (d.isUnresolved() ? "(token)" : formatSeconds(d.toSeconds()));
    const planned = this.plannedReplay.isUnresolved() || this.plannedReplay.toSeconds() > 0;
    return (
      `queue ${this.node.id}: retention ${f(this.retentionPeriod)} + parked in the DLQ ${f(this.dlqRetentionPeriod)} ` +
      `+ redriven ${f(this.retentionPeriod)}` +
      (planned ? ` + planned replay ${f(this.plannedReplay)}` : "")
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
