import { randomUUID } from "node:crypto";
import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Producer } from "kafkajs";
import type { InvokeResult } from "./functionHost.ts";
import type { OnFailureDestination } from "./model.ts";

export type DiscardCondition = "RetryAttemptsExhausted" | "RecordAgeExceeded";

/**
 * The invocation record Lambda sends to an SQS/SNS on-failure destination of a stream or Kafka
 * mapping: metadata about the discarded batch only, never the records themselves
 * (docs: "Retaining discarded records", services-dynamodb-errors / kafka-on-failure).
 */
export function invocationRecord(args: {
  functionArn: string;
  condition: DiscardCondition;
  approximateInvokeCount: number;
  lastResult?: InvokeResult;
  batchInfo: Record<string, unknown>;
  batchInfoKey: "DDBStreamBatchInfo" | "KafkaBatchInfo";
}): Record<string, unknown> {
  const r = args.lastResult;
  return {
    requestContext: {
      requestId: r?.requestId ?? randomUUID(),
      functionArn: args.functionArn,
      condition: args.condition,
      approximateInvokeCount: args.approximateInvokeCount,
    },
    responseContext: {
      statusCode: 200,
      executedVersion: "$LATEST",
      ...(r && !r.ok ? { functionError: r.kind === "Unhandled" ? "Unhandled" : r.kind } : {}),
    },
    version: "1.0",
    timestamp: new Date().toISOString(),
    [args.batchInfoKey]: args.batchInfo,
  };
}

/** Sends the metadata record to an SQS destination (Kafka destinations are handled by the Kafka source). */
export async function sendToSqsDestination(
  sqs: SQSClient,
  destination: OnFailureDestination | undefined,
  record: Record<string, unknown>,
): Promise<boolean> {
  if (destination?.kind !== "sqs") return false;
  await sqs.send(
    new SendMessageCommand({ QueueUrl: destination.queue.url, MessageBody: JSON.stringify(record) }),
  );
  return true;
}

export type { Producer };
