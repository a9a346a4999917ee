/**
 * The claim of a dedup key in the table, by the cheapest path that what this container knows allows:
 *
 * - a key never seen: a PartiQL INSERT, coalesced with other claims (`claims.maxBatch` > 1);
 * - a key that exists (known here, or met by the INSERT): a strongly consistent read, and the
 *   conditional UpdateItem only when the key is claimable;
 * - `claims: { maxBatch: 1 }`: the conditional UpdateItem straight away.
 *
 * A write of ours that landed although its answer was lost is recognised by its token (`ownClaim`).
 * The table always decides; what an existing item means is decided in dedupDecision.ts.
 */
import { randomUUID } from "node:crypto";
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { KeyReuseError } from "../core/errors.ts";
import { decideRejectedClaim, type ExistingDedupRecord, type RejectedClaim } from "./dedupDecision.ts";
import { type ClaimWrite, claimInsert, claimUpdate, dedupItemKey } from "./dedupRequests.ts";
import type { ClaimOptions, ClaimResult, Lease } from "./dedupStore.ts";
import type { KnownKeys } from "./knownKeys.ts";
import { DEDUP_ATTR as A, type DedupStatus, dedupPk } from "./schema.ts";
import type { StatementBatcher } from "./statementBatcher.ts";

/** What the claim path needs of its store. */
export interface ClaimDeps {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly scope: string;
  /** How long a claim is exclusive without renewal, in ms. */
  readonly leaseMs: number;
  /** How long a key is remembered (the TTL), in seconds. */
  readonly windowSeconds: number;
  readonly now: () => number;
  /** Coalesces the INSERTs of new keys. */
  readonly inserts: StatementBatcher;
  /** False for `claims: { maxBatch: 1 }`: every claim is the conditional UpdateItem. */
  readonly coalesce: boolean;
  /** Keys seen in the table: a claim of one reads before it writes (knownKeys.ts). */
  readonly known: KnownKeys;
  /** Strongly consistent single-item reads, coalesced (consistentReads.ts). */
  readonly read: (key: Record<string, AttributeValue>) => Promise<Record<string, AttributeValue> | undefined>;
}

/** A token of one of our writes whose answer may have been lost. */
type OwnToken = { readonly token: string; readonly expiresAtMs: number };

/** Claims `key` in the table: a lease, a duplicate, a key in progress elsewhere, or one routed before. */
export async function claimFromTable(
  deps: ClaimDeps,
  key: string,
  options: ClaimOptions,
): Promise<ClaimResult> {
  if (deps.known.has(key)) return claimExisting(deps, key, options, undefined);
  if (deps.coalesce) {
    const inserted = await insertClaim(deps, key, options);
    if (!("fallback" in inserted)) return inserted;
    return claimExisting(deps, key, options, inserted.fallback);
  }
  return claimWithUpdate(deps, key, options, undefined);
}

/** A new lease's write: a fresh token, the lease from now. */
function newClaimWrite(deps: ClaimDeps, key: string, { payloadHash, delivery }: ClaimOptions): ClaimWrite {
  const nowMs = deps.now();
  return {
    tableName: deps.tableName,
    pk: dedupPk(deps.scope, key),
    token: randomUUID(),
    expiresAtMs: nowMs + deps.leaseMs,
    nowMs,
    windowSeconds: deps.windowSeconds,
    payloadHash,
    delivery,
  };
}

const deliveryOf = (delivery: string | undefined) => (delivery ? { delivery } : {});

function leaseOf(key: string, w: ClaimWrite, attempt: number): Lease {
  return { key, token: w.token, expiresAtMs: w.expiresAtMs, attempt, ...deliveryOf(w.delivery) };
}

/** The common case, a key never seen: a PartiQL INSERT coalesced with other claims. */
async function insertClaim(
  deps: ClaimDeps,
  key: string,
  options: ClaimOptions,
): Promise<ClaimResult | { fallback: OwnToken }> {
  const w = newClaimWrite(deps, key, options);
  const r = await deps.inserts.execute(claimInsert(w));
  if (r.ok) return { status: "claimed", lease: leaseOf(key, w, 1) };
  // DuplicateItem (INSERT returns no old image) or anything else: the conditional update decides.
  return { fallback: { token: w.token, expiresAtMs: w.expiresAtMs } };
}

/**
 * A key that exists (known here, or met by the INSERT): read it (strongly consistent, coalesced
 * into BatchGetItem), and write only when it is claimable. A duplicate so costs one read unit and
 * no write: before, the failed INSERT and the failed conditional update cost a write unit each,
 * the 0.15 write units per new message above 2 in `npm run bench -- --only sqs`.
 */
async function claimExisting(
  deps: ClaimDeps,
  key: string,
  options: ClaimOptions,
  mine: OwnToken | undefined,
): Promise<ClaimResult> {
  const item = await deps.read(dedupItemKey(dedupPk(deps.scope, key)));
  const own = ownClaim(key, item, mine ? [mine] : [], options.delivery);
  if (own) return own;
  if (item) {
    const decision = decideRejectedClaim(
      parseExisting(item),
      options.payloadHash,
      deps.now(),
      options.delivery,
    );
    const answer = answerOf(deps.scope, key, decision);
    if (answer !== "retry") return answer;
  }
  return claimWithUpdate(deps, key, options, mine);
}

/** The conditional update: claims a key that is absent or claimable, and answers from ALL_OLD otherwise. */
async function claimWithUpdate(
  deps: ClaimDeps,
  key: string,
  options: ClaimOptions,
  mine: OwnToken | undefined,
): Promise<ClaimResult> {
  // "retry" only happens on a race with a concurrent release or clock skew; two tries settle it.
  const first = await claimOnce(deps, key, options, mine);
  if (first !== "retry") return first;
  const second = await claimOnce(deps, key, options);
  if (second !== "retry") return second;
  return { status: "in-progress", leaseExpiresAtMs: deps.now() };
}

/**
 * `mine` is an INSERT of ours that may have landed although its answer was lost (a timeout, then
 * the SDK's retry met the item as a duplicate): finding our own token means the claim is ours.
 */
async function claimOnce(
  deps: ClaimDeps,
  key: string,
  options: ClaimOptions,
  mine?: OwnToken,
): Promise<ClaimResult | "retry"> {
  const w = newClaimWrite(deps, key, options);
  try {
    const out = await deps.client.send(new UpdateItemCommand(claimUpdate(w)));
    const attempt = Number(out.Attributes?.[A.attempts]?.N ?? 1);
    return { status: "claimed", lease: leaseOf(key, w, attempt) };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const tokens = [{ token: w.token, expiresAtMs: w.expiresAtMs }, ...(mine ? [mine] : [])];
    const own = ownClaim(key, error.Item, tokens, options.delivery);
    if (own) return own;
    const decision = decideRejectedClaim(
      parseExisting(error.Item),
      options.payloadHash,
      deps.now(),
      options.delivery,
    );
    return answerOf(deps.scope, key, decision);
  }
}

/** A rejected claim's answer; throws KeyReuseError for a key seen with another payload hash. */
function answerOf(scope: string, key: string, decision: RejectedClaim): ClaimResult | "retry" {
  switch (decision.outcome) {
    case "duplicate":
      return { status: "duplicate", result: decision.result };
    case "routed":
      return { status: "routed", route: decision.route };
    case "in-progress":
      return {
        status: "in-progress",
        leaseExpiresAtMs: decision.leaseExpiresAtMs,
        ...(decision.sameDelivery ? { sameDelivery: true } : {}),
      };
    case "key-reuse":
      throw new KeyReuseError(
        `dedup key '${key}' in scope '${scope}' was already used for a different payload (hash ${decision.storedHash} ≠ ${decision.givenHash})`,
      );
    case "retry":
      return "retry";
  }
}

function parseExisting(item: Record<string, AttributeValue> | undefined): ExistingDedupRecord | undefined {
  if (!item) return undefined;
  const num = (name: string) => (item[name]?.N !== undefined ? Number(item[name]?.N) : undefined);
  return {
    status: (item[A.status]?.S ?? "IN_PROGRESS") as DedupStatus,
    leaseExpiresAtMs: num(A.leaseExpiresAt),
    expiresAtSec: num(A.expiresAt),
    payloadHash: item[A.payloadHash]?.S,
    result: item[A.result]?.S,
    routedBy: item[A.routedBy]?.SS,
    route: item[A.route]?.S,
    delivery: item[A.holder]?.S,
  };
}

/** The item holds one of our own tokens: a write of ours landed and only its answer was lost. */
function ownClaim(
  key: string,
  item: Record<string, AttributeValue> | undefined,
  tokens: ReadonlyArray<OwnToken>,
  delivery: string | undefined,
): ClaimResult | undefined {
  if (item?.[A.status]?.S !== "IN_PROGRESS") return undefined;
  const held = tokens.find((t) => t.token === item[A.leaseToken]?.S);
  if (!held) return undefined;
  const lease = Number(item[A.leaseExpiresAt]?.N ?? held.expiresAtMs);
  const attempt = Number(item[A.attempts]?.N ?? 1);
  return {
    status: "claimed",
    lease: { key, token: held.token, expiresAtMs: lease, attempt, ...deliveryOf(delivery) },
  };
}
