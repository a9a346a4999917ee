import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { QueueNotFoundError } from "./errors.ts";
import { parseQueueArn } from "./sqsEvent.ts";

/** A source queue as looked up from its ARN: URL, visibility timeout, redrive target and receive count. */
export interface QueueInfo {
  readonly url: string;
  readonly visibilityTimeoutSeconds: number;
  /** From the queue's RedrivePolicy; undefined when it has none. */
  readonly deadLetterUrl: string | undefined;
  /** From the RedrivePolicy: the receive on which SQS itself would dead-letter the message. */
  readonly maxReceiveCount: number | undefined;
}

/**
 * Looks up a source queue's URL, visibility timeout and DLQ once per container (Lambda reuses the
 * module between invocations). Needs sqs:GetQueueUrl and sqs:GetQueueAttributes.
 */
export class QueueResolver {
  private readonly cache = new Map<string, Promise<QueueInfo>>();
  private readonly sqs: SQSClient;

  constructor(sqs: SQSClient) {
    this.sqs = sqs;
  }

  resolve(queueArn: string, overrides: { deadLetterUrl?: string | undefined } = {}): Promise<QueueInfo> {
    let info = this.cache.get(queueArn);
    if (!info) {
      info = this.lookup(queueArn, overrides.deadLetterUrl);
      // A failed lookup must not be cached forever.
      info.catch(() => this.cache.delete(queueArn));
      this.cache.set(queueArn, info);
    }
    return info;
  }

  private async urlOf(arn: string): Promise<string> {
    const ref = parseQueueArn(arn);
    const out = await this.sqs.send(
      new GetQueueUrlCommand({ QueueName: ref.name, QueueOwnerAWSAccountId: ref.accountId }),
    );
    if (!out.QueueUrl) throw new QueueNotFoundError(`no URL for queue ${arn}`);
    return out.QueueUrl;
  }

  private async lookup(queueArn: string, deadLetterUrl: string | undefined): Promise<QueueInfo> {
    const url = await this.urlOf(queueArn);
    const { Attributes = {} } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ["VisibilityTimeout", "RedrivePolicy"],
      }),
    );
    let dlq = deadLetterUrl;
    let maxReceiveCount: number | undefined;
    if (Attributes.RedrivePolicy) {
      const policy = JSON.parse(Attributes.RedrivePolicy) as {
        deadLetterTargetArn?: string;
        maxReceiveCount?: number;
      };
      maxReceiveCount = policy.maxReceiveCount !== undefined ? Number(policy.maxReceiveCount) : undefined;
      if (!dlq && policy.deadLetterTargetArn) dlq = await this.urlOf(policy.deadLetterTargetArn);
    }
    return {
      url,
      visibilityTimeoutSeconds: Number(Attributes.VisibilityTimeout ?? 30),
      deadLetterUrl: dlq,
      maxReceiveCount,
    };
  }
}
