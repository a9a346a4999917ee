import { describe, expect, it } from "vitest";
import { aggregatesOutOfOrder } from "../../chaos/invariants.ts";
import type { ScenarioResult } from "../../chaos/scenarios.ts";
import { verdict } from "../../chaos/verdict.ts";

const clean = {
  messages: 10,
  faultsInjected: 3,
  lost: 0,
  duplicateEffects: 0,
  dlq: 1,
  poisonParkedCorrectly: true,
  aggregatesOutOfOrder: 0,
};
const result = (figures: Partial<ScenarioResult["figures"]> & Record<string, unknown>): ScenarioResult => ({
  name: "s",
  figures: { ...clean, ...figures },
  details: {},
  durationMs: 1,
});

describe("aggregatesOutOfOrder (chaos/invariants.ts)", () => {
  const rec = (id: string) => ({ key: null, value: null, headers: { "message-id": id } }) as never;
  const events = new Map([
    ["a", ["e1", "e2", "e3"]],
    ["b", ["f1", "f2"]],
  ]);
  it("counts an aggregate whose events' first occurrences go backwards", () => {
    expect(aggregatesOutOfOrder(events, ["e1", "f2", "e2", "f1", "e3"].map(rec))).toEqual(["b"]);
  });
  it("ignores duplicates after the first occurrence and events of other aggregates", () => {
    expect(aggregatesOutOfOrder(events, ["e1", "e2", "e1", "x9", "e3", "f1", "f2"].map(rec))).toEqual([]);
  });
});

describe("chaos verdict (the exit status of npm run chaos)", () => {
  it("fails a run in which a function was denied a call (issue 21), naming the grant", () => {
    const v = verdict(
      [result({})],
      [
        {
          at: 0,
          functionName: "relay",
          action: "kafka-cluster:WriteDataIdempotently",
          resource: "arn:aws:kafka:us-east-1:1:cluster/c/u",
          message: "User: … is not authorized",
          advice: "MskGrants.produce(fn, this, cluster, […])",
        },
      ],
    );
    expect(v.ok).toBe(false);
    expect(v.reasons[0]).toMatch(/relay: kafka-cluster:WriteDataIdempotently .* MskGrants\.produce/);
  });
  it("passes a clean run, including lease-guarded repeats that a crash explains", () => {
    expect(verdict([result({ leaseGuardedDuplicates: 2, unaccountedDuplicates: 0 })])).toEqual({
      ok: true,
      reasons: [],
    });
  });

  it("reads a figure a scenario does not measure (null) as not measured: it neither passes nor fails anything", () => {
    expect(
      verdict([result({ duplicateEffects: null, poisonParkedCorrectly: null, aggregatesOutOfOrder: null })]),
    ).toEqual({ ok: true, reasons: [] });
    expect(verdict([result({ duplicateEffects: null, lost: 1 })]).reasons).toEqual(["s: 1 lost"]);
  });

  it.each([
    [{ lost: 1 }, "s: 1 lost"],
    [{ goodDeadLettered: 2 }, "s: 2 good messages dead-lettered"],
    [{ duplicateEffects: 2 }, "s: 2 duplicate effects on the transactional path"],
    [{ unaccountedDuplicates: 1 }, "s: 1 repeated external effects not explained by a crash"],
    [{ halfApplied: 3 }, "s: 3 half-applied"],
    [{ aggregatesOutOfOrder: 1 }, "s: 1 aggregates out of order"],
    [{ poisonParkedCorrectly: false }, "s: bad input not parked with its typed error"],
  ])("fails %j", (figures, reason) => {
    expect(verdict([result({}), result(figures)])).toEqual({ ok: false, reasons: [reason] });
  });
});
