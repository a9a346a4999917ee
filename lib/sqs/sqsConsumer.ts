import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { MiddlewareObj, MiddyfiedHandler } from "@middy/core";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { batchHandler, batchMiddleware, telemetryOf } from "../batch/batchHandler.ts";
import type { Telemetry, TelemetryOptions } from "../observability/telemetry.ts";
import {
  createSqsBatchProcessor,
  type SqsConsumerOptions,
  type SqsRecordHandler,
} from "./sqsBatchProcessor.ts";
import { createSqsClient } from "./sqsClient.ts";
import { assertSqsEvent } from "./sqsEvent.ts";

/** The options of `sqsConsumer`: the processor's, with the clients and the telemetry made for you. */
export type SqsConsumerConfig<T> = Omit<
  SqsConsumerOptions<T>,
  "sqsClient" | "dynamodbClient" | "telemetry"
> & {
  /** The SQS client for parking, requeues and visibility changes. @default createSqsClient() */
  readonly sqsClient?: SQSClient;
  /** The DynamoDB client of the dedup store. @default new DynamoDBClient({}) */
  readonly dynamodbClient?: DynamoDBClient;
  /** A Telemetry, or options for one (service name, namespace, Powertools instances, logPayloads). */
  readonly telemetry?: Telemetry | TelemetryOptions;
};

/**
 * The batch-level middleware: rejects an event that is not an SQS batch before any record is
 * touched, and publishes the batch's EMF metrics whether the batch succeeded or not.
 */
export function sqsBatchMiddleware(
  telemetry: Telemetry,
): MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context> {
  return batchMiddleware("sqs", telemetry, assertSqsEvent);
}

/**
 * An SQS-triggered Lambda handler that runs `handler` once per record: idempotent on DynamoDB,
 * with partial batch responses, FIFO group order, poison parking, retry backoff and a visibility
 * heartbeat. It is a Middy handler, so `.use()` adds your own middlewares (injectLambdaContext...).
 *
 * ```ts
 * export const handler = sqsConsumer<Order>(async ({ body }) => saveOrder(body), {
 *   schema: Order,                         // zod or any Standard Schema
 *   key: (order) => order.orderId,         // business dedup key
 * });
 * ```
 */
export function sqsConsumer<T = unknown>(
  handler: SqsRecordHandler<T>,
  config: SqsConsumerConfig<T> = {},
): MiddyfiedHandler<SQSEvent, SQSBatchResponse, Error, Context> {
  const telemetry = telemetryOf(config.telemetry);
  const process = createSqsBatchProcessor(handler, {
    ...config,
    sqsClient: config.sqsClient ?? createSqsClient(),
    dynamodbClient: config.dynamodbClient ?? new DynamoDBClient({}),
    telemetry,
  });
  return batchHandler(sqsBatchMiddleware(telemetry), process);
}
