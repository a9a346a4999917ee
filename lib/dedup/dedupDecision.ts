import type { DedupStatus } from "./schema.ts";

/**
 * What an existing dedup record means for a claim: decided from the item DynamoDB returned with a
 * failed conditional update (ReturnValuesOnConditionCheckFailure: ALL_OLD), or from a strongly
 * consistent read of a key known to exist (then a duplicate costs a read and no write).
 */
export interface ExistingDedupRecord {
  readonly status: DedupStatus;
  readonly leaseExpiresAtMs: number | undefined;
  readonly expiresAtSec: number | undefined;
  readonly payloadHash: string | undefined;
  readonly result: string | undefined;
  /** Holders whose delivery of the key was routed on (`DEDUP_ATTR.routedBy`). */
  readonly routedBy?: ReadonlyArray<string> | undefined;
  readonly route?: string | undefined;
  /** The delivery the lease is held under (`DEDUP_ATTR.holder`), when the claim gave one. */
  readonly delivery?: string | undefined;
}

export type RejectedClaim =
  | { readonly outcome: "duplicate"; readonly result: string | undefined }
  /** `sameDelivery`: the lease is held under the claim's own delivery (`ClaimOptions.delivery`). */
  | { readonly outcome: "in-progress"; readonly leaseExpiresAtMs: number; readonly sameDelivery: boolean }
  /** This very delivery (the claim's `delivery`) was routed on before: ack it, do not run it. */
  | { readonly outcome: "routed"; readonly route: string }
  | { readonly outcome: "key-reuse"; readonly storedHash: string; readonly givenHash: string }
  /** The condition failed but the item no longer blocks us (a race with TTL or a release): retry once. */
  | { readonly outcome: "retry" };

export function decideRejectedClaim(
  existing: ExistingDedupRecord | undefined,
  givenHash: string | undefined,
  nowMs: number,
  givenDelivery?: string,
): RejectedClaim {
  if (!existing) return { outcome: "retry" };
  if (existing.expiresAtSec !== undefined && existing.expiresAtSec * 1000 < nowMs)
    return { outcome: "retry" };
  if (givenHash !== undefined && existing.payloadHash !== undefined && existing.payloadHash !== givenHash) {
    return { outcome: "key-reuse", storedHash: existing.payloadHash, givenHash };
  }
  if (existing.status === "COMPLETED") return { outcome: "duplicate", result: existing.result };
  // Before the lease: the copy this delivery was routed to may hold the key now, and that is no
  // reason to route the delivery once more.
  if (givenDelivery !== undefined && existing.routedBy?.includes(givenDelivery))
    return { outcome: "routed", route: existing.route ?? "" };
  if (existing.status === "ROUTED") return { outcome: "retry" };
  const lease = existing.leaseExpiresAtMs ?? 0;
  if (lease < nowMs) return { outcome: "retry" };
  // A live lease is never taken over, not even one held under this claim's own delivery: that may
  // be another invocation running it right now (ClaimOptions.delivery).
  const sameDelivery = givenDelivery !== undefined && existing.delivery === givenDelivery;
  return { outcome: "in-progress", leaseExpiresAtMs: lease, sameDelivery };
}
