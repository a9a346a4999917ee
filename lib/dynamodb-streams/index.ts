/**
 * reliable-consumers/dynamodb-streams: the DynamoDB Streams consumer for your own handlers.
 * `dynamodbStreamConsumer(handler, config)` is the Lambda handler (a Middy handler: `.use()` adds
 * yours); `dynamodbStreamBatchMiddleware` is its batch-level middleware (event shape, metrics) for
 * your own Middy chain. See the streams guide.
 */

export type { StreamOrdering } from "../streams/streamLanes.ts";
export {
  DYNAMODB_STREAM_CONSUMER_DEFAULTS,
  type DynamoDbStreamBatchResponse,
  type DynamoDbStreamConsumerConfig,
  type DynamoDbStreamRecordContext,
  type DynamoDbStreamRecordHandler,
  dynamodbStreamBatchMiddleware,
  dynamodbStreamConsumer,
} from "./dynamodbStreamConsumer.ts";
export type { DynamoDbEventName, DynamoDbStreamEnvelope } from "./dynamodbStreamEnvelope.ts";
export type { PlainItem } from "./streamImage.ts";
