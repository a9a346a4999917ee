// The migration guide's "before": an SQS handler on Powertools' batch and idempotency utilities
// (docs/migrating-from-powertools.md includes the region); test/integration/guideExamples.test.ts
// runs it beside the "after" (examples/migratedOrders.ts) on the same batch.
// #region before
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import type { Context, SQSEvent, SQSRecord } from "aws-lambda";
import { recordOrder } from "./orderEffects.ts";

const persistenceStore = new DynamoDBPersistenceLayer({ tableName: process.env.IDEMPOTENCY_TABLE_NAME! });
const config = new IdempotencyConfig({ eventKeyJmesPath: "powertools_json(body).orderId" });
const processRecord = makeIdempotent(
  async (record: SQSRecord) => recordOrder(JSON.parse(record.body) as { orderId: string }),
  { persistenceStore, config },
);
const processor = new BatchProcessor(EventType.SQS);

export const handler = async (event: SQSEvent, context: Context) => {
  config.registerLambdaContext(context);
  return processPartialResponse(event, processRecord, processor, { context, processInParallel: true });
};
// #endregion before
