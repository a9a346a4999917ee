import { randomUUID } from "node:crypto";
import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Producer } from "kafkajs";
import type { OnFailureDestination } from "../../runtime/model.ts";
import { type ConsumedRecord, toMskEvent } from "../kafka/mskEventBuilder.ts";
import type { InvokeResult } from "./functionHost.ts";

/**
 * Why a mapping gave a record up: its retries or its age ran out, or (a Kafka mapping with a schema
 * registry) it could not deserialize it, or its schema is not in the registry: the reason codes
 * Lambda sends such a record to the failure destination with ("Using schema registries with Kafka
 * event sources in Lambda").
 */
export type DiscardCondition =
  | "RetryAttemptsExhausted"
  | "RecordAgeExceeded"
  | "DESERIALIZATION_ERROR"
  | "SCHEMA_NOT_FOUND";

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
  batchInfoKey: "DDBStreamBatchInfo" | "KinesisBatchInfo" | "KafkaBatchInfo";
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

/**
 * What Lambda writes to a Kafka on-failure destination (`kafka://<topic>`), one message per failed
 * record ("Record format for a Kafka destination", Lambda developer guide, kafka-on-failure-
 * destination): the record's own key (so the destination partitions it as the source did), and as
 * value a JSON document with the failure metadata of an SQS/SNS destination (`requestContext`,
 * `responseContext`, `KafkaBatchInfo` with `batchSize: 1` and `recordInfo`) and the record itself
 * under `payload`, as an MSK event of one record (base64 key and value, headers as byte arrays).
 * No headers of its own: the record's headers travel inside `payload`.
 */
export function kafkaDestinationMessage(args: {
  functionArn: string;
  condition: DiscardCondition;
  approximateInvokeCount: number;
  lastResult?: InvokeResult;
  eventSourceArn: string;
  bootstrapServers: string;
  record: ConsumedRecord;
}): { key: Buffer | null; value: string } {
  const { record } = args;
  const payload = {
    bootstrapServers: args.bootstrapServers,
    ...toMskEvent([record], { eventSourceArn: args.eventSourceArn }),
  };
  const metadata = invocationRecord({
    functionArn: args.functionArn,
    condition: args.condition,
    approximateInvokeCount: args.approximateInvokeCount,
    ...(args.lastResult ? { lastResult: args.lastResult } : {}),
    batchInfoKey: "KafkaBatchInfo",
    batchInfo: {
      batchSize: 1,
      eventSourceArn: args.eventSourceArn,
      bootstrapServers: args.bootstrapServers,
      payloadSize: Buffer.byteLength(JSON.stringify(payload)),
      recordInfo: {
        offset: String(record.message.offset),
        timestamp: new Date(Number(record.message.timestamp)).toISOString(),
      },
    },
  });
  const key = record.message.key ?? null;
  return { key: key === null ? null : Buffer.from(key), value: JSON.stringify({ ...metadata, payload }) };
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
