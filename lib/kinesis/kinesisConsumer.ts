import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { MiddlewareObj, MiddyfiedHandler } from "@middy/core";
import type { Context, KinesisStreamRecord } from "aws-lambda";
import { batchHandler, batchMiddleware, telemetryOf } from "../batch/batchHandler.ts";
import type { BatchRecordContext } from "../batch/runBatch.ts";
import type { Telemetry, TelemetryOptions } from "../observability/telemetry.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import { type ParkedPayload, parkedPayloadOf } from "../streams/parkedPayload.ts";
import type { StreamBatchResponse } from "../streams/streamAnswer.ts";
import {
  createStreamBatchProcessor,
  STREAM_CONSUMER_DEFAULTS,
  type StreamConsumerOptions,
} from "../streams/streamBatchProcessor.ts";
import {
  type KinesisEnvelope,
  type KinesisEnvelopeOptions,
  kinesisData,
  toKinesisEnvelope,
} from "./kinesisEnvelope.ts";
import { assertKinesisEvent, kinesisBrokerId, kinesisCoordinates } from "./kinesisEvent.ts";

/** The Kinesis consumer's defaults, resolved once when it is created. Each is described on its option. */
export const KINESIS_CONSUMER_DEFAULTS = STREAM_CONSUMER_DEFAULTS;

/** The record, the Lambda context, and a signal that aborts when its lease is lost or the time is up. */
export type KinesisRecordContext = BatchRecordContext<KinesisStreamRecord>;

/** Your per-record function: runs once per Kinesis record, with its envelope and context. */
export type KinesisRecordHandler<T> = (
  envelope: KinesisEnvelope<T>,
  ctx: KinesisRecordContext,
) => Promise<unknown> | unknown;

// An interface, not an alias: a user's declaration emit (`declaration: true`, as in `cdk init`)
// names the handler's type through this entry point; an alias resolves to lib/streams, which the
// package does not export (TS2742).
/** The partial batch response of a Kinesis trigger: `itemIdentifier` is a sequence number. */
export interface KinesisBatchResponse extends StreamBatchResponse {}

/** A record's data as parked: the bytes (text or base64), or the `data` field as it came when it is not base64. */
function parkedKinesisPayload(r: KinesisStreamRecord): ParkedPayload {
  try {
    return parkedPayloadOf(kinesisData(r.kinesis.data));
  } catch {
    return { body: r.kinesis.data === "" ? "-" : r.kinesis.data, encoding: "base64" };
  }
}

/** The options of `kinesisConsumer`. */
export type KinesisConsumerConfig<T> = KinesisEnvelopeOptions<T> &
  Omit<StreamConsumerOptions<T, KinesisStreamRecord>, "sqsClient" | "dynamodbClient" | "telemetry"> & {
    /** The SQS client that parks records. @default createSqsClient() */
    readonly sqsClient?: SQSClient;
    /** The DynamoDB client of the dedup store. @default new DynamoDBClient({}) */
    readonly dynamodbClient?: DynamoDBClient;
    /** A Telemetry, or options for one (service name, namespace, Powertools instances, logPayloads). */
    readonly telemetry?: Telemetry | TelemetryOptions;
  };

/**
 * The batch-level middleware: rejects an event that is not a Kinesis batch (UnknownEventShapeError)
 * before any record is touched, and publishes the batch's EMF metrics whether it succeeded or not.
 */
export function kinesisBatchMiddleware(
  telemetry: Telemetry,
): MiddlewareObj<unknown, KinesisBatchResponse, Error, Context> {
  return batchMiddleware("kinesis", telemetry, assertKinesisEvent);
}

/**
 * A Kinesis Data Streams Lambda handler that runs `handler` once per record: idempotent on
 * DynamoDB, per-shard (or per-key) order, bad input and permanent failures parked with their
 * payload and context in the SQS queue of `DLQ_URL`, and partial batch responses (the lowest
 * unfinished sequence number). It is a Middy handler, so `.use()` adds your own middlewares.
 *
 * ```ts
 * export const handler = kinesisConsumer<Click>(async ({ body }) => record(body), {
 *   schema: Click,                     // zod or any Standard Schema
 *   key: (c) => c.clickId,             // business dedup key
 *   ordering: "key",                   // partition keys side by side
 * });
 * ```
 */
export function kinesisConsumer<T = unknown>(
  handler: KinesisRecordHandler<T>,
  config: KinesisConsumerConfig<T> = {},
): MiddyfiedHandler<unknown, KinesisBatchResponse, Error, Context> {
  const telemetry = telemetryOf(config.telemetry);
  const process = createStreamBatchProcessor<KinesisStreamRecord, T, KinesisEnvelope<T>>(
    handler,
    {
      ...config,
      sqsClient: config.sqsClient ?? createSqsClient(),
      dynamodbClient: config.dynamodbClient ?? new DynamoDBClient({}),
      telemetry,
    },
    {
      recordsOf: (event) => {
        assertKinesisEvent(event);
        return event.Records;
      },
      decode: (r) => toKinesisEnvelope(r, config),
      coordinates: kinesisCoordinates,
      orderingKey: (r) => r.kinesis.partitionKey,
      // The bytes as they were put: text when SQS can carry it, else base64 (`x-payload-encoding`).
      payload: parkedKinesisPayload,
      brokerId: kinesisBrokerId,
      describe: (r) => ({ eventID: r.eventID, partitionKey: r.kinesis.partitionKey }),
    },
  );
  return batchHandler(kinesisBatchMiddleware(telemetry), process);
}
