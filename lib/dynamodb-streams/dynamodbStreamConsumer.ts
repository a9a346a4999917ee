import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { MiddlewareObj, MiddyfiedHandler } from "@middy/core";
import type { Context, DynamoDBRecord } from "aws-lambda";
import { batchHandler, batchMiddleware, telemetryOf } from "../batch/batchHandler.ts";
import type { BatchRecordContext } from "../batch/runBatch.ts";
import { UnknownEventShapeError } from "../core/errors.ts";
import type { Telemetry, TelemetryOptions } from "../observability/telemetry.ts";
import { createSqsClient } from "../sqs/sqsClient.ts";
import { assertDynamoDbStreamEvent } from "../streams/dynamodbStreamEvent.ts";
import type { StreamBatchResponse, StreamCoordinates } from "../streams/streamAnswer.ts";
import {
  createStreamBatchProcessor,
  STREAM_CONSUMER_DEFAULTS,
  type StreamConsumerOptions,
} from "../streams/streamBatchProcessor.ts";
import {
  type DynamoDbEventName,
  type DynamoDbStreamEnvelope,
  type DynamoDbStreamEnvelopeOptions,
  toDynamoDbStreamEnvelope,
} from "./dynamodbStreamEnvelope.ts";
import { itemKeyOf } from "./streamImage.ts";

/** The DynamoDB Streams consumer's defaults, resolved once when it is created. Each is described on its option. */
export const DYNAMODB_STREAM_CONSUMER_DEFAULTS = STREAM_CONSUMER_DEFAULTS;

/** The record, the Lambda context, and a signal that aborts when its lease is lost or the time is up. */
export type DynamoDbStreamRecordContext = BatchRecordContext<DynamoDBRecord>;

/** Your per-record function: runs once per DynamoDB Streams record, with its envelope and context. */
export type DynamoDbStreamRecordHandler<T> = (
  envelope: DynamoDbStreamEnvelope<T>,
  ctx: DynamoDbStreamRecordContext,
) => Promise<unknown> | unknown;

// An interface, not an alias: a user's declaration emit (`declaration: true`, as in `cdk init`)
// names the handler's type through this entry point; an alias resolves to lib/streams, which the
// package does not export (TS2742).
/** The partial batch response of a DynamoDB Streams trigger: `itemIdentifier` is a sequence number. */
export interface DynamoDbStreamBatchResponse extends StreamBatchResponse {}

/** The options of `dynamodbStreamConsumer`. */
export type DynamoDbStreamConsumerConfig<T> = DynamoDbStreamEnvelopeOptions<T> &
  Omit<StreamConsumerOptions<T, DynamoDBRecord>, "sqsClient" | "dynamodbClient" | "telemetry"> & {
    /**
     * The changes the handler sees; records of other event names are acked unseen (no claim). A
     * filter on the event source mapping (`FilterCriteria`) saves the invocations as well.
     * @default every event name
     */
    readonly eventNames?: ReadonlyArray<DynamoDbEventName>;
    /** The SQS client that parks records. @default createSqsClient() */
    readonly sqsClient?: SQSClient;
    /** The DynamoDB client of the dedup store. @default new DynamoDBClient({}) */
    readonly dynamodbClient?: DynamoDBClient;
    /** A Telemetry, or options for one (service name, namespace, Powertools instances, logPayloads). */
    readonly telemetry?: Telemetry | TelemetryOptions;
  };

/**
 * The event's records, each with what the answer needs (`eventID`, `dynamodb.SequenceNumber`):
 * without a sequence number a record could not be reported, so such an event is refused whole.
 */
function recordsOf(event: unknown): ReadonlyArray<DynamoDBRecord> {
  assertDynamoDbStreamEvent(event);
  event.Records.forEach((r, i) => {
    if (typeof r.dynamodb?.SequenceNumber !== "string" || typeof r.eventID !== "string")
      throw new UnknownEventShapeError(`record ${i} has no eventID or dynamodb.SequenceNumber`);
  });
  return event.Records;
}

/** Where a DynamoDB Streams record sits. Lambda's event does not name the shard. */
const coordinates = (r: DynamoDBRecord): StreamCoordinates => ({
  streamArn: r.eventSourceARN ?? "",
  shardId: undefined,
  sequenceNumber: r.dynamodb?.SequenceNumber ?? "",
});

/**
 * The batch-level middleware: rejects an event that is not a DynamoDB Streams batch
 * (UnknownEventShapeError) before any record is touched, and publishes the batch's EMF metrics
 * whether it succeeded or not.
 */
export function dynamodbStreamBatchMiddleware(
  telemetry: Telemetry,
): MiddlewareObj<unknown, DynamoDbStreamBatchResponse, Error, Context> {
  return batchMiddleware("dynamodbStream", telemetry, recordsOf);
}

/**
 * A DynamoDB Streams Lambda handler that runs `handler` once per change record: images unmarshalled
 * to plain objects and checked by your schema, idempotent on DynamoDB (keyed by `eventID`, or your
 * business key), per-shard (or per-item) order, bad input and permanent failures parked with the
 * record and its context in the SQS queue of `DLQ_URL`, and partial batch responses. It is a Middy
 * handler, so `.use()` adds your own middlewares.
 *
 * ```ts
 * export const handler = dynamodbStreamConsumer<Order>(
 *   async ({ body, eventName, removedByTtl }) => project(eventName, body, removedByTtl),
 *   { schema: Order, eventNames: ["INSERT", "MODIFY"] },
 * );
 * ```
 */
export function dynamodbStreamConsumer<T = unknown>(
  handler: DynamoDbStreamRecordHandler<T>,
  config: DynamoDbStreamConsumerConfig<T> = {},
): MiddyfiedHandler<unknown, DynamoDbStreamBatchResponse, Error, Context> {
  const telemetry = telemetryOf(config.telemetry);
  const names = config.eventNames ? new Set<string>(config.eventNames) : undefined;
  const process = createStreamBatchProcessor<DynamoDBRecord, T, DynamoDbStreamEnvelope<T>>(
    handler,
    {
      ...config,
      sqsClient: config.sqsClient ?? createSqsClient(),
      dynamodbClient: config.dynamodbClient ?? new DynamoDBClient({}),
      telemetry,
    },
    {
      recordsOf,
      decode: (r) => toDynamoDbStreamEnvelope(r, config),
      ...(names ? { skip: (r: DynamoDBRecord) => !names.has(r.eventName ?? "") } : {}),
      coordinates,
      orderingKey: (r) => itemKeyOf(r.dynamodb?.Keys),
      // The record as Lambda gave it (images in DynamoDB JSON): text, and all a replay needs.
      payload: (r) => ({ body: JSON.stringify(r), encoding: "text" }),
      brokerId: (r) => r.eventID ?? "",
      describe: (r) => ({ eventID: r.eventID, sequenceNumber: r.dynamodb?.SequenceNumber }),
    },
  );
  return batchHandler(dynamodbStreamBatchMiddleware(telemetry), process);
}
