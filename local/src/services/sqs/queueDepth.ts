/** A queue's approximate depth by state: what the console shows and what scenarios wait on. */
import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";

export interface QueueDepth {
  readonly visible: number;
  /** Received and not yet deleted (ApproximateNumberOfMessagesNotVisible). */
  readonly inFlight: number;
  readonly delayed: number;
}

export async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<QueueDepth> {
  const { Attributes: a } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
      ],
    }),
  );
  return {
    visible: Number(a?.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a?.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(a?.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}
