import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";

export interface TestQueue {
  url: string;
  arn: string;
  dlqUrl: string;
  dlqArn: string;
}

/** A queue with a redrive DLQ (FIFO when the name ends in .fifo). */
export async function createQueueWithDlq(
  sqs: SQSClient,
  name: string,
  options: { visibilityTimeout?: number; maxReceiveCount?: number; fifo?: boolean } = {},
): Promise<TestQueue> {
  const suffix = options.fifo ? ".fifo" : "";
  const fifoAttrs: Record<string, string> = options.fifo ? { FifoQueue: "true" } : {};
  const dlqUrl = (
    await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq${suffix}`, Attributes: fifoAttrs }))
  ).QueueUrl!;
  const dlqArn = await arnOf(sqs, dlqUrl);
  const url = (
    await sqs.send(
      new CreateQueueCommand({
        QueueName: `${name}${suffix}`,
        Attributes: {
          ...fifoAttrs,
          VisibilityTimeout: String(options.visibilityTimeout ?? 30),
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: dlqArn,
            maxReceiveCount: options.maxReceiveCount ?? 5,
          }),
        },
      }),
    )
  ).QueueUrl!;
  return { url, arn: await arnOf(sqs, url), dlqUrl, dlqArn };
}

export async function arnOf(sqs: SQSClient, url: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }),
  );
  return Attributes!.QueueArn!;
}

export async function deleteQueues(sqs: SQSClient, q: TestQueue): Promise<void> {
  await Promise.allSettled([
    sqs.send(new DeleteQueueCommand({ QueueUrl: q.url })),
    sqs.send(new DeleteQueueCommand({ QueueUrl: q.dlqUrl })),
  ]);
}

export interface OutgoingMessage {
  body: string;
  attributes?: Record<string, MessageAttributeValue>;
  groupId?: string;
  dedupId?: string;
}

export async function sendAll(sqs: SQSClient, url: string, messages: OutgoingMessage[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 10) {
    const out = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: messages.slice(i, i + 10).map((m, j) => ({
          Id: String(j),
          MessageBody: m.body,
          MessageAttributes: m.attributes,
          MessageGroupId: m.groupId,
          MessageDeduplicationId: m.dedupId,
        })),
      }),
    );
    if (out.Failed?.length) throw new Error(`send failed: ${JSON.stringify(out.Failed)}`);
  }
}

/** Receives everything currently visible (until one empty poll). */
export async function drainQueue(sqs: SQSClient, url: string, waitSeconds = 1) {
  const all = [];
  for (;;) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: waitSeconds,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    if (!out.Messages?.length) return all;
    all.push(...out.Messages);
  }
}
