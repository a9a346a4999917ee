import type { Denial } from "reliable-consumers-local";
import type { ScenarioResult } from "./scenarios.ts";

/**
 * The pass/fail rule of a chaos run: nothing lost anywhere; no duplicate effect on the
 * transactional path; every repeated lease-guarded external effect matched by an injected crash
 * after the effect; nothing half-applied; every bad input parked with its typed error; no good
 * message dead-lettered; every aggregate in order; no call denied for lack of a grant (the local
 * runtime enforces each function's IAM policies, issue 21). A figure a scenario does not measure is
 * null and fails nothing (chaos/invariants.ts, CheckFigures).
 */
export function verdict(
  results: readonly ScenarioResult[],
  denials: readonly Denial[] = [],
): { ok: boolean; reasons: string[] } {
  const reasons: string[] = denials.map(
    (d) => `${d.functionName}: ${d.action} on ${d.resource} denied; grant it with ${d.advice}`,
  );
  for (const r of results) {
    const f = r.figures;
    if (f.lost !== 0) reasons.push(`${r.name}: ${f.lost} lost`);
    // null: not measured by this scenario (never read as "0" or "true").
    if (f.duplicateEffects !== null && f.duplicateEffects !== 0)
      reasons.push(`${r.name}: ${f.duplicateEffects} duplicate effects on the transactional path`);
    if (typeof f.unaccountedDuplicates === "number" && f.unaccountedDuplicates > 0)
      reasons.push(
        `${r.name}: ${f.unaccountedDuplicates} repeated external effects not explained by a crash`,
      );
    if (typeof f.halfApplied === "number" && f.halfApplied > 0)
      reasons.push(`${r.name}: ${f.halfApplied} half-applied`);
    if (f.poisonParkedCorrectly === false)
      reasons.push(`${r.name}: bad input not parked with its typed error`);
    if (typeof f.goodDeadLettered === "number" && f.goodDeadLettered > 0)
      reasons.push(`${r.name}: ${f.goodDeadLettered} good messages dead-lettered`);
    // The replication contract of a 3-broker cluster with min.insync.replicas 2.
    if (f.acksAllWithOneDown === false)
      reasons.push(`${r.name}: acks=all failed with one broker of three down`);
    if (f.acksAllRefusedWithTwoDown === false)
      reasons.push(`${r.name}: acks=all was not refused with NOT_ENOUGH_REPLICAS with two brokers down`);
    if (typeof f.publishedDuringOutage === "number" && f.publishedDuringOutage > 0)
      reasons.push(`${r.name}: ${f.publishedDuringOutage} records written below min.insync.replicas`);
    if (typeof f.crashersNotReplayable === "number" && f.crashersNotReplayable > 0)
      reasons.push(`${r.name}: ${f.crashersNotReplayable} isolated records the dlq tool cannot replay`);
    if (typeof f.keysOutOfOrder === "number" && f.keysOutOfOrder > 0)
      reasons.push(`${r.name}: ${f.keysOutOfOrder} partition keys applied out of order`);
    if (typeof f.crashersApplied === "number" && f.crashersApplied > 0)
      reasons.push(`${r.name}: ${f.crashersApplied} records Lambda gave up on were applied anyway`);
    if (f.aggregatesOutOfOrder !== null && f.aggregatesOutOfOrder > 0)
      reasons.push(`${r.name}: ${f.aggregatesOutOfOrder} aggregates out of order`);
  }
  return { ok: reasons.length === 0, reasons };
}
