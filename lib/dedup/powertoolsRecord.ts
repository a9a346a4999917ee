/**
 * The idempotency records of Powertools for AWS Lambda (TypeScript), read-only and with no AWS
 * SDK: the key its `makeIdempotent` stores a payload under, and what a record it left means for
 * a claim of ours. Mirrors `@aws-lambda-powertools/idempotency` 2.x, read at 2.35.0:
 *
 * - the key is `<prefix>#<hash>`, where the hash is `createHash(hashFunction)` (default `md5`),
 *   digest `base64` (padded, not base64url), of `JSON.stringify(deepSort(data))`, and `data` is
 *   what `eventKeyJmesPath` selected (`BasePersistenceLayer.getHashedIdempotencyKey`);
 * - the prefix is `makeIdempotent`'s `keyPrefix` when given (trimmed), else the
 *   `AWS_LAMBDA_FUNCTION_NAME` of the process that built the `DynamoDBPersistenceLayer`
 *   (`makeIdempotent` passes no function name, so nothing is appended);
 * - a key is free for a new run when its item is absent, past `expiration` (epoch seconds), or
 *   `INPROGRESS` with an `in_progress_expiration` (epoch ms) that has passed
 *   (`DynamoDBPersistenceLayer._putRecord`'s condition).
 *
 * `test/unit/powertoolsRecord.test.ts` checks the keys against Powertools' own code.
 */
import { createHash } from "node:crypto";

/** The IAM actions the cut-over reads Powertools' table with (`grantPowertoolsTableRead`). */
export const POWERTOOLS_TABLE_ACTIONS = ["dynamodb:BatchGetItem"] as const;

/**
 * The attribute names of Powertools' `DynamoDBPersistenceLayer`, as its options name them, with
 * its defaults (`keyAttr`, and `PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS`).
 */
export interface PowertoolsAttributes {
  /** The attribute holding the idempotency key (the partition key, unless `sortKeyAttr`). @default "id" */
  readonly keyAttr?: string;
  /**
   * Set when the table has a sort key: the idempotency key is then the sort key, and the partition
   * key holds `staticPkValue`. @default - none (the idempotency key is the partition key)
   */
  readonly sortKeyAttr?: string;
  /** With `sortKeyAttr`: the partition key's value. @default `idempotency#<keyPrefix>` */
  readonly staticPkValue?: string;
  /** The attribute holding the record's status (`INPROGRESS`, `COMPLETED`, …). @default "status" */
  readonly statusAttr?: string;
  /** The attribute holding the record's expiry, epoch seconds. @default "expiration" */
  readonly expiryAttr?: string;
  /**
   * The attribute holding the in-progress lock's expiry, epoch milliseconds.
   * @default "in_progress_expiration"
   */
  readonly inProgressExpiryAttr?: string;
}

/** The attribute names resolved, Powertools' defaults filled in. */
export type PowertoolsAttributeNames = Required<Omit<PowertoolsAttributes, "sortKeyAttr" | "staticPkValue">> &
  Pick<PowertoolsAttributes, "sortKeyAttr"> & { readonly staticPkValue: string };

export function powertoolsAttributeNames(
  keyPrefix: string,
  attributes: PowertoolsAttributes = {},
): PowertoolsAttributeNames {
  return {
    keyAttr: attributes.keyAttr ?? "id",
    ...(attributes.sortKeyAttr ? { sortKeyAttr: attributes.sortKeyAttr } : {}),
    staticPkValue: attributes.staticPkValue ?? `idempotency#${keyPrefix.trim()}`,
    statusAttr: attributes.statusAttr ?? "status",
    expiryAttr: attributes.expiryAttr ?? "expiration",
    inProgressExpiryAttr: attributes.inProgressExpiryAttr ?? "in_progress_expiration",
  };
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  Object.prototype.toString.call(value) === "[object Object]";

/**
 * Powertools' `deepSort`: object keys sorted case-insensitively, recursively, arrays kept in order.
 * The comparator is Powertools' own (never 0), so keys that differ only in case sort as they do there.
 */
export function powertoolsDeepSort(data: unknown): unknown {
  if (Array.isArray(data)) return data.map(powertoolsDeepSort);
  if (!isPlainObject(data)) return data;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(data).sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1)))
    sorted[key] = powertoolsDeepSort(data[key]);
  return sorted;
}

/**
 * The idempotency key Powertools stored `data` under: `<keyPrefix>#<base64 hash>`. `data` is what
 * its `eventKeyJmesPath` selected from the record (`messageId` → the message id string).
 */
export function powertoolsIdempotencyKey(keyPrefix: string, data: unknown, hashFunction = "md5"): string {
  const hash = createHash(hashFunction)
    .update(JSON.stringify(powertoolsDeepSort(data)))
    .digest("base64");
  return `${keyPrefix.trim()}#${hash}`;
}

/** The fields of a Powertools record that decide what it means (`PowertoolsAttributeNames`). */
export interface PowertoolsRecord {
  readonly status: string | undefined;
  /** `expiration`, epoch seconds. */
  readonly expiresAtSec: number | undefined;
  /** `in_progress_expiration`, epoch ms; absent when the handler registered no Lambda context. */
  readonly inProgressUntilMs: number | undefined;
}

/** What a Powertools record means for a key ours has just claimed. */
export type PowertoolsVerdict =
  /** Powertools ran it and its record is within its window: ours must not run it again. */
  | { readonly kind: "completed" }
  /** A Powertools invocation may be running it now: wait until `untilMs`, when Powertools itself would take it over. */
  | { readonly kind: "in-progress"; readonly untilMs: number }
  /** No record Powertools would honour (none, expired, or a lock it would take over itself): ours runs it. */
  | { readonly kind: "free" };

/**
 * Reads a record as Powertools would when it tries to claim the key (`_putRecord`): expired
 * records and in-progress locks past `in_progress_expiration` are free, `COMPLETED` is done, and
 * any other lock holds. A lock without `in_progress_expiration` (no Lambda context registered)
 * holds until the record expires, as it does for Powertools; so does a status Powertools does not
 * write (it would refuse the record with `IdempotencyInvalidStatusError`): what we cannot read we
 * do not run.
 */
export function powertoolsVerdict(record: PowertoolsRecord | undefined, nowMs: number): PowertoolsVerdict {
  if (!record) return { kind: "free" };
  const expiresAtMs = record.expiresAtSec === undefined ? undefined : record.expiresAtSec * 1000;
  if (expiresAtMs !== undefined && expiresAtMs < nowMs) return { kind: "free" };
  if (record.status === "COMPLETED") return { kind: "completed" };
  if (record.status === "INPROGRESS" && record.inProgressUntilMs !== undefined) {
    return record.inProgressUntilMs < nowMs
      ? { kind: "free" }
      : { kind: "in-progress", untilMs: record.inProgressUntilMs };
  }
  // Powertools always writes `expiration`; without one, nothing says when to look again: soon.
  return { kind: "in-progress", untilMs: expiresAtMs ?? nowMs };
}
