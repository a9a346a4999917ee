/**
 * Keys this process is claiming or holds. The store lives at container scope, and on Lambda
 * Managed Instances several invocations share it: a second claim of a key that another
 * invocation here is claiming is answered from that claim, and one that it holds is "in
 * progress", with no request. Without this both claims went into one BatchExecuteStatement and
 * DynamoDB rejected the whole request for its duplicate key, failing every claim in it.
 */
import type { ClaimResult, Lease } from "./dedupStore.ts";

/** The claims of one container's invocations on one store, by key. */
export interface LocalClaims {
  /** Answers from this process when it can, else runs `fromTable` as the key's one claim here. */
  claim(
    key: string,
    delivery: string | undefined,
    fromTable: () => Promise<ClaimResult>,
  ): Promise<ClaimResult>;
  renewed(lease: Lease): void;
  /** The lease was completed, released or lost: the table decides from now on. */
  drop(lease: Lease): void;
}

/** The local claims of one store; `now` tells a live lease from an expired one. */
export function createLocalClaims(now: () => number): LocalClaims {
  const claiming = new Map<string, { claim: Promise<ClaimResult>; delivery: string | undefined }>();
  const held = new Map<string, Lease>();
  // What another claim here learnt holds for this one too, unless the two are different
  // deliveries: this one may have routed the key before (`routedBy`), which only the table knows.
  const shared = (theirs: string | undefined, mine: string | undefined) =>
    mine === undefined || theirs === mine;
  const inProgress = (leaseExpiresAtMs: number, theirs: string | undefined, mine: string | undefined) =>
    ({
      status: "in-progress",
      leaseExpiresAtMs,
      ...(mine !== undefined && theirs === mine ? { sameDelivery: true } : {}),
    }) as const;

  return {
    async claim(key, delivery, fromTable) {
      for (;;) {
        const lease = held.get(key);
        // A lease past its expiry proves nothing (its holder may be stuck): the table decides.
        if (lease && lease.expiresAtMs > now() && shared(lease.delivery, delivery))
          return inProgress(lease.expiresAtMs, lease.delivery, delivery);
        const first = claiming.get(key);
        if (!first) break;
        const result = await first.claim.catch(() => undefined);
        // A duplicate is one for every delivery.
        if (result?.status === "duplicate") return result;
        if (!shared(first.delivery, delivery)) continue;
        // The other invocation won it: for this one the key is held elsewhere.
        if (result?.status === "claimed")
          return inProgress(result.lease.expiresAtMs, first.delivery, delivery);
        // Shared: its answer is this one's, but its delivery is not this one's when this one has none.
        if (result?.status === "in-progress" && delivery === undefined)
          return inProgress(result.leaseExpiresAtMs, undefined, undefined);
        if (result) return result;
        // Its claim failed, which proves nothing about the key: look again, then ask the table.
      }
      // No await between the check above and this set, so one claim per key is in flight here.
      const claim = fromTable();
      claiming.set(key, { claim, delivery });
      try {
        const result = await claim;
        if (result.status === "claimed") held.set(key, result.lease);
        return result;
      } finally {
        claiming.delete(key);
      }
    },
    renewed(lease) {
      if (held.get(lease.key)?.token === lease.token) held.set(lease.key, lease);
    },
    drop(lease) {
      if (held.get(lease.key)?.token === lease.token) held.delete(lease.key);
    },
  };
}
