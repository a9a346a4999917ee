import { describe, expect, it } from "vitest";
import type { ScenarioResult } from "../../chaos/scenarios.ts";
import { verdict } from "../../chaos/verdict.ts";

const clean = {
  messages: 10,
  faultsInjected: 3,
  lost: 0,
  duplicateEffects: 0,
  dlq: 1,
  poisonParkedCorrectly: true,
};
const result = (figures: Partial<ScenarioResult["figures"]> & Record<string, unknown>): ScenarioResult => ({
  name: "s",
  figures: { ...clean, ...figures },
  details: {},
  durationMs: 1,
});

describe("chaos verdict (the exit status of npm run chaos)", () => {
  it("passes a clean run, including lease-guarded repeats that a crash explains", () => {
    expect(verdict([result({ leaseGuardedDuplicates: 2, unaccountedDuplicates: 0 })])).toEqual({
      ok: true,
      reasons: [],
    });
  });

  it.each([
    [{ lost: 1 }, "s: 1 lost"],
    [{ duplicateEffects: 2 }, "s: 2 duplicate effects on the transactional path"],
    [{ unaccountedDuplicates: 1 }, "s: 1 repeated external effects not explained by a crash"],
    [{ halfApplied: 3 }, "s: 3 half-applied"],
    [{ aggregatesOutOfOrder: 1 }, "s: 1 aggregates out of order"],
    [{ poisonParkedCorrectly: false }, "s: bad input not parked with its typed error"],
  ])("fails %j", (figures, reason) => {
    expect(verdict([result({}), result(figures)])).toEqual({ ok: false, reasons: [reason] });
  });
});
