import { describe, expect, it } from "vitest";
import { COVERED, coveredFiles, longFunctions, OWN_LINES_LIMIT } from "../../scripts/functionSize.ts";

describe(`no function has more than ${OWN_LINES_LIMIT} lines of its own (${COVERED.join(", ")})`, () => {
  it("counts a function's own lines, not those of the named functions it holds", () => {
    const over = coveredFiles().flatMap((f) => longFunctions(f));
    expect(over.map((f) => `${f.file}:${f.line} ${f.name} (${f.ownLines} lines)`)).toEqual([]);
  });

  it("finds a long function when there is one", () => {
    // The rule must be able to fail: this file's own describe callback, measured with a limit of 5.
    expect(longFunctions(import.meta.filename, 5).length).toBeGreaterThan(0);
  });
});
