import { LAMBDA_ENV } from "reliable-consumers/cdk";
import { sqsConsumer as fromRoot, sqsConsumer } from "reliable-consumers/sqs";
import { describe, expect, it } from "vitest";

// The package imports itself by name; in this repository the `reliable-consumers-source` condition
// resolves those imports to lib/ (vitest.config.ts), so what the suite tests is the current source.
describe("in-repo resolution by the package's own name", () => {
  it("resolves the entry points to the sources in lib/", async () => {
    expect(typeof sqsConsumer).toBe("function");
    expect(fromRoot).toBe(sqsConsumer);
    expect(LAMBDA_ENV.dlqUrl).toBe("DLQ_URL");
    expect(import.meta.resolve("reliable-consumers/sqs")).toMatch(/\/lib\/sqs\/index\.ts$/);
  });
});
