/**
 * reliable-consumers/kinesis: the Kinesis Data Streams consumer. `kinesisConsumer(handler, config)`
 * is the Lambda handler (a Middy handler: `.use()` adds yours); `kinesisBatchMiddleware` is its
 * batch-level middleware (event shape, metrics) for your own Middy chain. See the streams guide.
 */

export type { StreamOrdering } from "../streams/streamLanes.ts";
export {
  KINESIS_CONSUMER_DEFAULTS,
  type KinesisBatchResponse,
  type KinesisConsumerConfig,
  type KinesisRecordContext,
  type KinesisRecordHandler,
  kinesisBatchMiddleware,
  kinesisConsumer,
} from "./kinesisConsumer.ts";
export type { KinesisEnvelope, KinesisPayloadFormat } from "./kinesisEnvelope.ts";
