import * as api from "reliable-consumers";
import * as cdk from "reliable-consumers/cdk";
import * as ddbStreams from "reliable-consumers/dynamodb-streams";
import * as kafka from "reliable-consumers/kafka";
import * as kinesis from "reliable-consumers/kinesis";
import * as outbox from "reliable-consumers/outbox";
import * as sqs from "reliable-consumers/sqs";
import { describe, expect, it } from "vitest";

describe("public API", () => {
  it("exports each thing from one entry point: the consumers from theirs, the shared parts from the root", () => {
    const entries: Array<[Record<string, unknown>, string[]]> = [
      [api, ["createDedupStore", "createTelemetry", "classifyError"]],
      [sqs, ["sqsConsumer", "sqsBatchMiddleware", "createSqsClient"]],
      [kafka, ["kafkaConsumer", "getKafkaProducer"]],
      [kinesis, ["kinesisConsumer", "kinesisBatchMiddleware"]],
      [ddbStreams, ["dynamodbStreamConsumer", "dynamodbStreamBatchMiddleware"]],
      [outbox, ["createInboxOutbox", "createOutboxRelay", "createOutboxSweeper", "withUnitOfWork"]],
    ];
    for (const [entry, names] of entries)
      for (const name of names) expect(typeof entry[name], name).toBe("function");
    // No entry point re-exports another's (one way to import each thing).
    expect(api).not.toHaveProperty("sqsConsumer");
    expect(api).not.toHaveProperty("kafkaConsumer");
    expect(sqs).not.toHaveProperty("PermanentError");
    expect(api.classifyError(new api.SchemaValidationError("x", []))).toBe("permanent");
    expect(api.DEDUP_TABLE.ttlAttribute).toBe("expiresAt");
  });

  // The whole surface is pinned by api/*.api.md (test/package/apiReport.test.ts); these are the
  // internals that once leaked, kept out by name. Tests import them by path.
  it("publishes no internal", () => {
    const internals: Array<[Record<string, unknown>, string[]]> = [
      [
        api,
        [
          "LEASE_CADENCE",
          "DEDUP_TABLE_ACTIONS",
          "fullJitterDelaySeconds",
          "HeldBackError",
          "createIdempotency",
        ],
      ],
      [sqs, ["createSqsBatchProcessor", "VisibilityHeartbeat", "toSqsEnvelope", "packAttributes"]],
      [
        kinesis,
        ["createStreamBatchProcessor", "toKinesisEnvelope", "streamBatchResponse", "parkStreamRecord"],
      ],
      [ddbStreams, ["createStreamBatchProcessor", "toDynamoDbStreamEnvelope", "unmarshallImage"]],
      [outbox, ["createOutboxPublisher", "pendingShard", "OUTBOX_ATTR", "parseOutboxItem"]],
      [kafka, ["toMskEvent", "kafkajsRequestQueueFixed", "dueDecision", "topicRole", "createPromiseCache"]],
      [
        cdk,
        ["PREBUILT_ESBUILD_OPTIONS", "prebuiltHandlerDir", "isKnown", "formatSeconds", "ORDERS_QUEUE_URL"],
      ],
    ];
    for (const [entry, names] of internals) for (const name of names) expect(entry).not.toHaveProperty(name);
    expect(cdk.LAMBDA_ENV).not.toHaveProperty("ordersQueueUrl");
    expect(cdk.LAMBDA_ENV).not.toHaveProperty("reportQueueUrl");
  });
});
