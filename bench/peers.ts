/** The peer we measure against: Powertools' BatchProcessor + makeIdempotent on DynamoDB. */
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type {
  Context,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
  KinesisStreamRecord,
  SQSBatchResponse,
  SQSEvent,
  SQSRecord,
} from "aws-lambda";

export function powertoolsSqsHandler(
  client: DynamoDBClient,
  tableName: string,
  work: (body: { orderId: string }) => Promise<void>,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: client });
  // Same business key as ours: the orderId inside the JSON body.
  const config = new IdempotencyConfig({ eventKeyJmesPath: "powertools_json(body).orderId" });
  const processRecord = makeIdempotent(
    async (record: SQSRecord) => {
      await work(JSON.parse(record.body) as { orderId: string });
    },
    { persistenceStore, config },
  );
  const processor = new BatchProcessor(EventType.SQS);
  return async (event, context) => {
    config.registerLambdaContext(context);
    return processPartialResponse(event, processRecord, processor, { context, processInParallel: true });
  };
}

/** How the Kinesis peer runs a batch's records: Powertools' default (all at once) or one after another. */
export type PowertoolsKinesisMode = "parallel" | "sequential";

/**
 * The Kinesis peer: `BatchProcessor(EventType.KinesisDataStreams)` + `makeIdempotent` on DynamoDB.
 * `processInParallel` defaults to true in Powertools (BasePartialProcessor); `sequential` keeps a
 * shard's order, as a Kinesis consumer usually must.
 */
export function powertoolsKinesisHandler(
  client: DynamoDBClient,
  tableName: string,
  work: (body: { orderId: string }, sequenceNumber: string) => Promise<void>,
  mode: PowertoolsKinesisMode,
): (event: KinesisStreamEvent, context: Context) => Promise<KinesisStreamBatchResponse> {
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: client });
  // Same business key as ours: the orderId in the record's data, which is base64 JSON. Powertools'
  // own Kinesis envelope reads it so: `Records[*].kinesis.powertools_json(powertools_base64(data))`
  // (@aws-lambda-powertools/jmespath, envelopes.js, KINESIS_DATA_STREAM).
  const config = new IdempotencyConfig({
    eventKeyJmesPath: "kinesis.powertools_json(powertools_base64(data)).orderId",
  });
  const processRecord = makeIdempotent(
    async (record: KinesisStreamRecord) => {
      const body = JSON.parse(Buffer.from(record.kinesis.data, "base64").toString("utf8"));
      await work(body as { orderId: string }, record.kinesis.sequenceNumber);
    },
    { persistenceStore, config },
  );
  const processor = new BatchProcessor(EventType.KinesisDataStreams);
  const processInParallel = mode === "parallel";
  return async (event, context) => {
    config.registerLambdaContext(context);
    return processPartialResponse(event, processRecord, processor, { context, processInParallel });
  };
}
