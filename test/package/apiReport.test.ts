import { describe, expect, it } from "vitest";
import { apiReports, undocumentedExports } from "../../scripts/apiReport.ts";

/**
 * The public API is pinned by the reports in api/ (one per entry point of the `exports` of both
 * packages, the library and reliable-consumers-local, made by API Extractor from the declarations
 * their builds ship). A change of the exported surface fails here until the reports are updated
 * with `npm run api` and checked in with it.
 */
describe("the public API", () => {
  it("matches the checked-in API reports, entry point by entry point", { timeout: 180_000 }, () => {
    const reports = apiReports({ update: false });
    expect(reports.map((r) => r.entry)).toEqual([
      "reliable-consumers",
      "reliable-consumers/sqs",
      "reliable-consumers/kinesis",
      "reliable-consumers/dynamodb-streams",
      "reliable-consumers/kafka",
      "reliable-consumers/outbox",
      "reliable-consumers/dlq",
      "reliable-consumers/cdk",
      "reliable-consumers-local",
      "reliable-consumers-local/cli",
    ]);
    for (const r of reports) {
      expect(r.problems, `${r.reportFile}: API Extractor reported problems`).toEqual([]);
      expect(
        r.changed,
        `${r.reportFile} differs from the exported API: run \`npm run api\` and check it in`,
      ).toBe(false);
    }
  });

  it("gives every export a TSDoc comment", () => {
    expect(undocumentedExports()).toEqual([]);
  });
});
