/**
 * The dedup table's shape: the one source of truth for the library and for the CDK construct
 * (`lib/cdk/dedupTable.ts` reads these names).
 */
export const DEDUP_ATTR = {
  /** Partition key, `<scope>#<key>`. The table has no sort key. */
  pk: "pk",
  status: "status",
  leaseToken: "leaseToken",
  /** Epoch milliseconds. */
  leaseExpiresAt: "leaseExpiresAt",
  /** Epoch seconds; the table's TTL attribute. */
  expiresAt: "expiresAt",
  payloadHash: "payloadHash",
  result: "result",
  attempts: "attempts",
  /**
   * The delivery the lease is held under (a Kafka record's coordinates, `ClaimOptions.delivery`),
   * when the claim gave one. It grants nothing: a live lease is never taken over.
   */
  holder: "holder",
  /**
   * The deliveries (a string set) of this key that were routed elsewhere (a Kafka retry topic or
   * the DLQ) rather than processed: their redelivery is recognised, never run or routed again.
   */
  routedBy: "routedBy",
  /** Where the last routed delivery went (the consumer's own description, opaque to the store). */
  route: "route",
} as const;

export const DEDUP_PARTITION_KEY = DEDUP_ATTR.pk;
/** The dedup table's TTL attribute (epoch seconds). */
export const DEDUP_TTL_ATTRIBUTE = DEDUP_ATTR.expiresAt;

/**
 * `ROUTED`: the last delivery did not process the key but sent it on (a retry topic, the DLQ); the
 * next copy (another delivery) may claim it, the routed deliveries' redeliveries may not (`routedBy`).
 */
export type DedupStatus = "IN_PROGRESS" | "COMPLETED" | "ROUTED";

/** The IAM actions the dedup store uses, for least-privilege grants. */
export const DEDUP_TABLE_ACTIONS = [
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
  "dynamodb:PartiQLInsert",
  "dynamodb:PartiQLUpdate",
  "dynamodb:BatchGetItem",
] as const;
// Claims and completions are coalesced PartiQL INSERTs/UPDATEs; BatchExecuteStatement itself is
// authorised per statement, so it needs no action of its own. BatchGetItem: a key that exists is
// read (strongly consistent, coalesced) before it is written, so a duplicate costs no write.

/** Defaults that the CDK construct checks against queue retention and retry ladders. */
export const DEDUP_DEFAULTS = {
  /**
   * 30 days: longer than the longest way a message comes back with the constructs' defaults, which
   * counts the copies the library sends itself as new messages: SQS retention 4 d + a parked copy's
   * DLQ retention 14 d + a redriven copy's retention 4 d = 22 d; Kafka main 7 d + ladder + DLQ 14 d +
   * a replayed copy's 7 d ≈ 21 d (`lib/cdk/rules.ts`).
   */
  windowSeconds: 30 * 24 * 3600,
  leaseMs: 30_000,
} as const;

/** The dedup table's partition key of `key` in `scope` (a consumer, or the scope it was given). */
export function dedupPk(scope: string, key: string): string {
  return `${scope}#${key}`;
}

/**
 * The dedup table's shape, for tools that read or create it (the local runtime, a dashboard): its
 * partition key, TTL attribute (epoch seconds), the attributes of a record, the partition key of a
 * key in a scope, and the defaults the store and the construct use. The store and `DedupTable`
 * read the same names, so they cannot drift apart.
 */
export const DEDUP_TABLE = {
  partitionKey: DEDUP_PARTITION_KEY,
  ttlAttribute: DEDUP_TTL_ATTRIBUTE,
  attributes: DEDUP_ATTR,
  pk: dedupPk,
  defaults: DEDUP_DEFAULTS,
} as const;
