import * as api from "reliable-consumers";
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
});
