/**
 * What a failed claim means, decided from the item DynamoDB returned with the failure
 * (ReturnValuesOnConditionCheckFailure: ALL_OLD), so a duplicate costs one request and no read.
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
