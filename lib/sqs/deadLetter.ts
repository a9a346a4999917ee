import { type MessageAttributeValue, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { contextToHeaders, type FailureContext } from "../core/failureContext.ts";
import {
  carriedMessageId,
  type PlainAttribute,
  packAttributes,
  unpackAttributes,
} from "./attributePacking.ts";

/**
 * The user's own message attributes of a record, as they were first sent: a copy that carries them
 * folded (it had all 10, see `packAttributes`) gives them back unfolded, so a later park or copy
 * keeps them. Our packed failure context is not among them.
 */
export function plainAttributes(record: SQSRecord): Record<string, PlainAttribute> {
  const out: Record<string, PlainAttribute> = {};
  for (const [name, a] of Object.entries(record.messageAttributes ?? {})) {
    out[name] =
      a.binaryValue !== undefined
        ? { DataType: a.dataType, BinaryValueBase64: a.binaryValue }
        : { DataType: a.dataType, StringValue: a.stringValue ?? "" };
  }
  return unpackAttributes(out).attributes;
}

export function toSdkAttributes(
  attrs: Record<string, PlainAttribute>,
): Record<string, MessageAttributeValue> {
  return Object.fromEntries(
    Object.entries(attrs).map(([name, a]) => [
      name,
      a.BinaryValueBase64 !== undefined
        ? { DataType: a.DataType, BinaryValue: Buffer.from(a.BinaryValueBase64, "base64") }
        : { DataType: a.DataType, StringValue: a.StringValue ?? "" },
    ]),
  );
}

/**
 * Parks a record in a dead-letter queue: the body untouched, the user's attributes kept, the
 * failure context packed alongside. Resolves only once SQS has accepted the message; the caller
 * acks the source record only after that. `abortSignal` (the settlement deadline) cancels the call.
 */
export async function parkInDeadLetterQueue(
  sqs: SQSClient,
  deadLetterUrl: string,
  record: SQSRecord,
  context: FailureContext,
  abortSignal?: AbortSignal,
): Promise<void> {
  // A redriven copy keeps the id its original was deduplicated under, through every later park.
  const strings = Object.fromEntries(
    Object.entries(record.messageAttributes ?? {}).map(([k, a]) => [k, a.stringValue]),
  );
  const carried = carriedMessageId(strings);
  const attributes = packAttributes(
    plainAttributes(record),
    contextToHeaders(carried ? { ...context, messageId: carried } : context),
  );
  const fifo = deadLetterUrl.endsWith(".fifo");
  // A group SQS accepted on the source queue, so a valid one here too: kept as it is (not through
  // `toFifoId`, which would move an id with a `~` to another group than its source's).
  const group = record.attributes.MessageGroupId;
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: deadLetterUrl,
      MessageBody: record.body,
      MessageAttributes: toSdkAttributes(attributes),
      ...(fifo
        ? {
            MessageGroupId: group ?? "dead-letter",
            // Same source message → same dedup id, so a retried park does not double-park.
            MessageDeduplicationId: record.messageId,
          }
        : // A fair queue's record (a standard queue, a group id) keeps its tenant in the DLQ, so the
          // DLQ is fair too and a redrive puts it back in its tenant.
          group !== undefined
          ? { MessageGroupId: group }
          : {}),
    }),
    abortSignal ? { abortSignal } : {},
  );
}
