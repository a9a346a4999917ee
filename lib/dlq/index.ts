/**
 * reliable-consumers/dlq: inspect, filter and redrive the SQS DLQs and replay the Kafka
 * dead-letter topic from code (what `npx reliable-consumers dlq` does).
 */
export type { DeadLetterFilter, DeadLetterSummary, MoveProgress } from "./filters.ts";
export {
  inspectKafkaDeadLetters,
  type KafkaDeadLetter,
  type ReadOptions,
  type ReplayOptions,
  type ReplayResult,
  readTopicToEnd,
  replayKafkaDeadLetters,
} from "./kafkaDeadLetters.ts";
export { type LambdaFailureRecord, readLambdaFailureRecord } from "./lambdaFailureRecord.ts";
export {
  inspectSqsDeadLetters,
  type RedriveOptions,
  type RedriveResult,
  redriveSqsDeadLetters,
  type SqsDeadLetter,
  toSqsDeadLetter,
} from "./sqsDeadLetters.ts";
