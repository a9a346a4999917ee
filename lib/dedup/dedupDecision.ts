/**
 * What an existing dedup record means for a claim: decided from the item DynamoDB returned with a
 * failed conditional update (ReturnValuesOnConditionCheckFailure: ALL_OLD), or from a strongly
 * consistent read of a key known to exist (then a duplicate costs a read and no write).
 */
export interface ExistingDedupRecord {
  readonly status: "IN_PROGRESS" | "COMPLETED";
  readonly leaseExpiresAtMs: number | undefined;
  readonly expiresAtSec: number | undefined;
  readonly payloadHash: string | undefined;
  readonly result: string | undefined;
}

export type RejectedClaim =
  | { readonly outcome: "duplicate"; readonly result: string | undefined }
  | { readonly outcome: "in-progress"; readonly leaseExpiresAtMs: number }
  | { readonly outcome: "key-reuse"; readonly storedHash: string; readonly givenHash: string }
  /** The condition failed but the item no longer blocks us (a race with TTL or a release): retry once. */
  | { readonly outcome: "retry" };

export function decideRejectedClaim(
  existing: ExistingDedupRecord | undefined,
  givenHash: string | undefined,
  nowMs: number,
): RejectedClaim {
  if (!existing) return { outcome: "retry" };
  if (existing.expiresAtSec !== undefined && existing.expiresAtSec * 1000 < nowMs)
    return { outcome: "retry" };
  if (givenHash !== undefined && existing.payloadHash !== undefined && existing.payloadHash !== givenHash) {
    return { outcome: "key-reuse", storedHash: existing.payloadHash, givenHash };
  }
  if (existing.status === "COMPLETED") return { outcome: "duplicate", result: existing.result };
  const lease = existing.leaseExpiresAtMs ?? 0;
  if (lease < nowMs) return { outcome: "retry" };
  return { outcome: "in-progress", leaseExpiresAtMs: lease };
}
