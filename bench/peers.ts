/** The peer we measure against: Powertools' BatchProcessor + makeIdempotent on DynamoDB. */
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";

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
