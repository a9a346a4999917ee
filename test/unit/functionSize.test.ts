import { describe, expect, it } from "vitest";
import {
  COVERED,
  coveredFiles,
  longFunctions,
  OWN_LINES_LIMIT,
  SPAN_LIMIT,
} from "../../scripts/functionSize.ts";

describe(`no function spans more than ${SPAN_LIMIT} lines or has ${OWN_LINES_LIMIT} of its own (${COVERED.join(", ")})`, () => {
  it("measures every function: its whole span, closures included, and its own lines", () => {
    const over = coveredFiles().flatMap((f) => longFunctions(f));
    expect(over.map((f) => `${f.file}:${f.line} ${f.name} (span ${f.span}, own ${f.ownLines})`)).toEqual([]);
  });

  it("finds a long function when there is one, by its own lines and by its span", () => {
    // The rules must be able to fail: this file's own describe callback, measured with small limits.
    expect(longFunctions(import.meta.filename, 5).length).toBeGreaterThan(0);
    const bySpan = longFunctions(import.meta.filename, 1000, 5);
    expect(bySpan.some((f) => f.span > 5 && f.ownLines < 1000)).toBe(true);
  });
});
