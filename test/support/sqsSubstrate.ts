import { describe, inject } from "vitest";

/**
 * The SQS the integration tests run on. Every SQS-side file runs twice in `npm test`: on fauxqs
 * (project `suite`) and on LocalStack's own runtime, localstack-core from PyPI (project
 * `sqs-localstack`, vitest.config.ts). DynamoDB Local and Kafka are shared by both runs. Where the
 * two differ from each other or from SQS's documentation, the test says so next to the assertion,
 * with `onLocalStack` (test/integration/sqsSemantics.test.ts gathers them; docs/local.md lists them).
 */
export type SqsSubstrate = "fauxqs" | "localstack";

export const sqsSubstrate: SqsSubstrate = inject("sqsSubstrate") ?? "fauxqs";
export const onLocalStack = sqsSubstrate === "localstack";
/** For test names: `sqsConsumer against ${SQS_NAME} and DynamoDB Local`. */
export const SQS_NAME = onLocalStack ? "LocalStack's SQS" : "fauxqs";

/**
 * A block of an SQS-side file that makes no SQS call (a Kafka or DynamoDB-only part): it runs on
 * the fauxqs pass, and the LocalStack pass lists it as skipped instead of running it again.
 */
export const describeWithoutSqs = describe.skipIf(onLocalStack);
