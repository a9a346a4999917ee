// Before: an SQS handler on Powertools for AWS Lambda, BatchProcessor + makeIdempotent on DynamoDB.
// docs/migrating-from-powertools.md includes this file; test/integration/migrateFromPowertools.test.ts runs it.
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { chargeOrder, type Order } from "./orders.ts";

// #region before
const processor = new BatchProcessor(EventType.SQS);
// Keys are stored as `<AWS_LAMBDA_FUNCTION_NAME>#<md5 of the orderId>`.
const persistenceStore = new DynamoDBPersistenceLayer({
  tableName: process.env.IDEMPOTENCY_TABLE_NAME ?? "",
});
const config = new IdempotencyConfig({ eventKeyJmesPath: "powertools_json(body).orderId" });

const chargeOnce = makeIdempotent(
  async (record: SQSRecord) => chargeOrder(JSON.parse(record.body) as Order),
  {
    persistenceStore,
    config,
  },
);

export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  config.registerLambdaContext(context);
  return processPartialResponse(event, chargeOnce, processor, { context });
};
// #endregion before
