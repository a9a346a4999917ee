/**
 * reliable-consumers/sqs: the SQS consumer. `sqsConsumer(handler, config)` is the Lambda handler
 * (a Middy handler: `.use()` adds yours); `sqsBatchMiddleware` is its batch-level middleware (event
 * shape, metrics) for your own Middy chain. See the SQS guide.
 */

export type { BackoffPolicy } from "./backoff.ts";
export { type RecordContext, SQS_CONSUMER_DEFAULTS, type SqsRecordHandler } from "./sqsBatchProcessor.ts";
export { createSqsClient } from "./sqsClient.ts";
export { type SqsConsumerConfig, sqsBatchMiddleware, sqsConsumer } from "./sqsConsumer.ts";
export { FIFO_ID_PATTERN, SQS_LIMITS } from "./sqsLimits.ts";
export type { HeartbeatOptions } from "./visibilityHeartbeat.ts";
