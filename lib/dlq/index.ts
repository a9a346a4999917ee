/**
 * reliable-consumers/dlq: inspect, filter and redrive the SQS DLQs and replay the Kafka
 * dead-letter topic from code (what `npx reliable-consumers dlq` does).
 */
export * from "./filters.ts";
export {
  inspectKafkaDeadLetters,
  type KafkaDeadLetter,
  type ReadOptions,
  type ReplayOptions,
  type ReplayResult,
  readTopicToEnd,
  replayKafkaDeadLetters,
  toDeadLetters,
} from "./kafkaDeadLetters.ts";
export {
  type LambdaFailedRecord,
  type LambdaFailureRecord,
  readLambdaFailureRecord,
} from "./lambdaFailureRecord.ts";
export { reframedForReplay, replayMessage } from "./replayMessage.ts";
export {
  inspectSqsDeadLetters,
  type RedriveOptions,
  type RedriveResult,
  redriveSqsDeadLetters,
  type SqsDeadLetter,
  toSqsDeadLetter,
} from "./sqsDeadLetters.ts";
