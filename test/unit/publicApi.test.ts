import * as api from "reliable-consumers";
import * as cdk from "reliable-consumers/cdk";
import * as kafka from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";

describe("public API (lib/index.ts)", () => {
  it("exports the handlers, the dedup store, the outbox and the error types", () => {
    for (const name of [
      "sqsConsumer",
      "kafkaConsumer",
      "createDedupStore",
      "createInboxOutbox",
      "createOutboxRelay",
      "createOutboxSweeper",
      "withUnitOfWork",
      "getKafkaProducer",
      "createSqsClient",
      "createTelemetry",
    ]) {
      expect(typeof (api as Record<string, unknown>)[name], name).toBe("function");
    }
    expect(new api.PermanentError("x")).toBeInstanceOf(api.ConsumerError);
    expect(api.classifyError(new api.SchemaValidationError("x", []))).toBe("permanent");
    expect(api.DEDUP_TTL_ATTRIBUTE).toBe("expiresAt");
  });

  // The whole surface is pinned by api/*.api.md (test/package/apiReport.test.ts); these are the
  // internals that once leaked, kept out by name. Tests import them by path.
  it("publishes no internal", () => {
    const internals: Array<[Record<string, unknown>, string[]]> = [
      [api, ["LEASE_CADENCE", "DEDUP_TABLE_ACTIONS", "fullJitterDelaySeconds"]],
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
