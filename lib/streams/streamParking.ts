/**
 * Parking a stream record in the SQS queue of the consumer (`DLQ_URL`): the payload (text, or
 * base64 with `x-payload-encoding`) and its failure context, packed as every SQS copy of ours is
 * (`attributePacking.ts`). Lambda's own on-failure destination of a stream mapping gets metadata
 * only (shard, sequence range), never the record, so the consumer parks what it gives up on itself,
 * and the payload outlives the stream's retention (24 h by default).
 */
import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { contextToHeaders, type FailureContext } from "../core/failureContext.ts";
import { type PlainAttribute, packAttributes } from "../sqs/attributePacking.ts";
import { toSdkAttributes } from "../sqs/deadLetter.ts";
import { toFifoId } from "../sqs/fifoIds.ts";
import { PAYLOAD_ENCODING_ATTRIBUTE, type ParkedPayload } from "./parkedPayload.ts";
import type { StreamCoordinates } from "./streamAnswer.ts";

/** One record to park: its payload, where it was, its ordering key, and why it failed. */
export interface ParkedRecord {
  readonly payload: ParkedPayload;
  readonly coordinates: StreamCoordinates;
  readonly orderingKey: string | undefined;
  readonly context: FailureContext;
}

/** The SendMessage input of a parked record (pure). On a FIFO queue: grouped by ordering key, deduplicated by coordinates. */
export function parkedMessage(queueUrl: string, parked: ParkedRecord) {
  const { payload, coordinates: c } = parked;
  const own: Record<string, PlainAttribute> =
    payload.encoding === "text"
      ? {}
      : { [PAYLOAD_ENCODING_ATTRIBUTE]: { DataType: "String", StringValue: payload.encoding } };
  const attributes = toSdkAttributes(packAttributes(own, contextToHeaders(parked.context)));
  return {
    QueueUrl: queueUrl,
    MessageBody: payload.body,
    MessageAttributes: attributes,
    ...(queueUrl.endsWith(".fifo")
      ? {
          MessageGroupId: toFifoId(parked.orderingKey ?? c.shardId ?? "parked"),
          // Same record → same dedup id, so a park retried within SQS's 5 minutes is not doubled.
          MessageDeduplicationId: toFifoId(`${c.streamArn}/${c.shardId ?? ""}/${c.sequenceNumber}`),
        }
      : {}),
  };
}

/** Sends it; resolves once SQS has it (the record is acked only then). `abortSignal`: the settlement deadline. */
export async function parkStreamRecord(
  sqs: SQSClient,
  queueUrl: string,
  parked: ParkedRecord,
  abortSignal?: AbortSignal,
): Promise<void> {
  await sqs.send(new SendMessageCommand(parkedMessage(queueUrl, parked)), abortSignal ? { abortSignal } : {});
}
