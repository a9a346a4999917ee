/**
 * The parking queue's send: where the relay and the sweeper put an event that can never be
 * published, with its context (settle.ts builds the body and attributes).
 */
import { type MessageAttributeValue, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { toFifoId } from "../sqs/fifoIds.ts";

/**
 * Sends one parked record to a parking queue (a plain SendMessage; it is rare). On a FIFO queue its
 * group (the item's key: one group per aggregate) and dedup id go through `toFifoId`, as the
 * publisher's do: a key SQS refuses would fail the park and block the relay's shard.
 */
export async function sendToParkingQueue(
  sqs: SQSClient,
  queueUrl: string,
  body: string,
  attributes: Record<string, MessageAttributeValue>,
  fifoGroup?: string,
  dedupId?: string,
): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: body,
      MessageAttributes: attributes,
      ...(queueUrl.endsWith(".fifo")
        ? {
            MessageGroupId: toFifoId(fifoGroup ?? "parked"),
            ...(dedupId !== undefined ? { MessageDeduplicationId: toFifoId(dedupId) } : {}),
          }
        : {}),
    }),
  );
}
