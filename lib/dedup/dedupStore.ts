import { randomUUID } from "node:crypto";
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { Envelope } from "../core/envelope.ts";
import { KeyReuseError, LeaseLostError } from "../core/errors.ts";
import { createConsistentReader } from "./consistentReads.ts";
import { decideRejectedClaim, type ExistingDedupRecord, type RejectedClaim } from "./dedupDecision.ts";
import { createKnownKeys } from "./knownKeys.ts";
import { DEDUP_ATTR as A, DEDUP_DEFAULTS, type DedupStatus, dedupPk } from "./schema.ts";
import { type BatchingOptions, DYNAMODB_BATCH_LIMIT, StatementBatcher } from "./statementBatcher.ts";

/** Options of `createDedupStore`. */
export interface DedupStoreOptions {
  readonly tableName: string;
  /** Dedup scope: the consumer. Two consumers of one event must both process it. */
  readonly scope: string;
  /** @default a new DynamoDBClient from the environment */
  readonly client?: DynamoDBClient;
  /** How long a claim is exclusive without renewal. @default 30 000 ms */
  readonly leaseMs?: number;
  /** How long a key is remembered (the TTL). Must exceed the longest retry path. @default DEDUP_DEFAULTS.windowSeconds (30 days) */
  readonly windowSeconds?: number;
  /**
   * Claim coalescing: new keys are claimed with PartiQL INSERTs, up to 25 per request; a key that
   * exists (met by the INSERT, or known to this container) is read strongly consistent, up to 100
   * per BatchGetItem, and written with the conditional UpdateItem only when it is claimable.
   * `{ maxBatch: 1 }` claims each new key with its own UpdateItem. @default { maxBatch: 25, maxDelayMs: 2 }
   */
  readonly claims?: BatchingOptions;
  /** Completion grouping (fenced PartiQL UPDATEs, up to 25 per request). @default { maxBatch: 25, maxDelayMs: 10, idleMs: 2 } */
  readonly completion?: BatchingOptions;
  /** Injectable clock for tests. */
  readonly now?: () => number;
}

/** Proof of an exclusive claim. Only its holder can complete, renew or release the key. */
export interface Lease {
  readonly key: string;
  readonly token: string;
  readonly expiresAtMs: number;
  readonly attempt: number;
  /** The claim's `delivery`, when it gave one. */
  readonly delivery?: string;
}

/**
 * What a claim of a dedup key gives: a lease to run the effect, a duplicate (with its stored
 * result), or a key another claim is working on.
 */
export type ClaimResult =
  | { readonly status: "claimed"; readonly lease: Lease }
  | { readonly status: "duplicate"; readonly result: string | undefined }
  | {
      readonly status: "in-progress";
      readonly leaseExpiresAtMs: number;
      /**
       * The lease is held under this claim's own `delivery`: another invocation has the same
       * delivery (a Kafka offset handed out twice at once), or one that died holding it left its
       * lease. Either way it is no other message, and its lease ends by `leaseExpiresAtMs` unless
       * a live holder renews it. @default false
       */
      readonly sameDelivery?: boolean;
    }
  /**
   * This delivery of the key was routed on before (`recordRoute`): a redelivery of a record
   * already sent to a retry topic or the DLQ, to be acked, neither run nor routed again. `route`
   * is what `recordRoute` was given.
   */
  | { readonly status: "routed"; readonly route: string };

export interface ClaimOptions {
  readonly payloadHash?: string;
  /**
   * Which delivery of the key claims it: a Kafka record's `topic:partition:offset`, which every
   * redelivery of that record shares (a copy on a retry topic has its own). It is recorded with
   * the lease and, once the delivery is routed on (`recordRoute`), in the key's routed set, so a
   * redelivery of a routed record answers `routed`; and a lease found under it answers
   * `in-progress` with `sameDelivery`.
   *
   * It never lets a claim take a live lease over. Lambda hands a partition's records to one
   * invocation at a time as a rule, but AWS promises at-least-once delivery and nothing about
   * concurrency (a poller rebalance can hand one offset to two invocations at once), so a live
   * lease under the same delivery may be a running invocation: taking it over ran the effect twice
   * (issue 34 item 10). The lease itself (its token) is the claim's alone.
   * @default - none
   */
  readonly delivery?: string;
  /**
   * The record the key was read from, for a store that looks beyond its own table (the Powertools
   * cut-over, `powertoolsCutover.ts`); this store ignores it. @default - none
   */
  readonly envelope?: Envelope;
}

/** Fenced dedup leases on DynamoDB, scoped by consumer + key: claim, renew, complete, release. */
export interface DedupStore {
  readonly scope: string;
  readonly tableName: string;
  /**
   * A new key: one conditional write (coalesced). A key that exists (known to this container, or
   * met by the write): a strongly consistent read, and a write only when it is claimable. Throws
   * KeyReuseError when the key was seen with another payload hash.
   */
  claim(key: string, options?: ClaimOptions): Promise<ClaimResult>;
  /** Fenced; grouped with other completions. Rejects with LeaseLostError if the lease was taken over. */
  complete(lease: Lease, result?: string): Promise<void>;
  /** Fenced delete, so a retry can claim at once. A lost lease is not an error here. */
  release(lease: Lease): Promise<void>;
  /**
   * Fenced, in place of `release` for a delivery that was not processed but sent on (a Kafka retry
   * topic, the DLQ), once the copy is durable: the key is free for the next holder (the copy), and
   * a claim by this lease's holder answers `routed` from now on (its redelivery is recognised).
   * A lease without a holder is released (nothing could recognise it). Rejects with LeaseLostError.
   * @default - a store without it releases the lease (a redelivery then runs again)
   */
  recordRoute?(lease: Lease, route: string): Promise<void>;
  /** Fenced lease extension for long jobs. Rejects with LeaseLostError. */
  renew(lease: Lease, leaseMs?: number): Promise<Lease>;
  /** Waits for every grouped completion to be written. Call before acking the batch. */
  flush(): Promise<void>;
}

const n = (v: number): AttributeValue => ({ N: String(v) });
const deliveryOf = (delivery: string | undefined) => (delivery ? { delivery } : {});
const s = (v: string): AttributeValue => ({ S: v });

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
  tokens: ReadonlyArray<{ token: string; expiresAtMs: number }>,
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

/** Creates a dedup store on a DynamoDB table. */
export function createDedupStore(options: DedupStoreOptions): DedupStore {
  const client = options.client ?? new DynamoDBClient({});
  const leaseMs = options.leaseMs ?? DEDUP_DEFAULTS.leaseMs;
  const windowSeconds = options.windowSeconds ?? DEDUP_DEFAULTS.windowSeconds;
  const now = options.now ?? Date.now;
  const { tableName, scope } = options;
  const completions = new StatementBatcher(client, options.completion ?? {}, 10);
  const claimBatchSize = options.claims?.maxBatch ?? DYNAMODB_BATCH_LIMIT;
  const claims = new StatementBatcher(client, options.claims ?? {}, 2);
  const keyOf = (key: string) => ({ [A.pk]: s(dedupPk(scope, key)) });
  const names = {
    "#status": A.status,
    "#token": A.leaseToken,
    "#lease": A.leaseExpiresAt,
    "#exp": A.expiresAt,
  };

  /**
   * `mine` is an INSERT of ours that may have landed although its answer was lost (a timeout, then
   * the SDK's retry met the item as a duplicate): finding our own token means the claim is ours.
   */
  async function claimOnce(
    key: string,
    { payloadHash, delivery }: ClaimOptions,
    mine?: { token: string; expiresAtMs: number },
  ): Promise<ClaimResult | "retry"> {
    const t = now();
    const token = randomUUID();
    const expiresAtMs = t + leaseMs;
    // Claimable when absent, past its TTL (TTL deletion lags by days), IN_PROGRESS with an expired
    // lease, or ROUTED (the copy it was sent on as claims it); never by a delivery that routed it
    // before (`recordRoute`: its redelivery is answered `routed`), and never while a lease lives,
    // whoever holds it (`ClaimOptions.delivery`). UpdateItem rather than PutItem: the same single
    // conditional write, and it can count attempts.
    const hashGuard = payloadHash ? " AND (attribute_not_exists(#hash) OR #hash = :hash)" : "";
    const notRoutedHere = delivery ? " AND NOT contains(#routedBy, :delivery)" : "";
    const free = "(#status = :inProgress AND #lease < :nowMs) OR #status = :routed";
    // DynamoDB refuses redundant parentheses, so the group is wrapped only when it has guards.
    const claimable = hashGuard || notRoutedHere ? `((${free})${hashGuard}${notRoutedHere})` : free;
    try {
      const out = await client.send(
        new UpdateItemCommand({
          TableName: tableName,
          Key: keyOf(key),
          UpdateExpression: `SET #status = :inProgress, #token = :token, #lease = :lease, #exp = :exp, #attempts = if_not_exists(#attempts, :zero) + :one${payloadHash ? ", #hash = :hash" : ""}${delivery ? ", #holder = :delivery" : ""} REMOVE #result${delivery ? "" : ", #holder"}`,
          ConditionExpression: `attribute_not_exists(#pk) OR #exp < :nowSec OR ${claimable}`,
          ExpressionAttributeNames: {
            ...names,
            "#pk": A.pk,
            "#attempts": A.attempts,
            "#result": A.result,
            "#holder": A.holder,
            ...(delivery ? { "#routedBy": A.routedBy } : {}),
            ...(payloadHash ? { "#hash": A.payloadHash } : {}),
          },
          ExpressionAttributeValues: {
            ":inProgress": s("IN_PROGRESS"),
            ":routed": s("ROUTED"),
            ":token": s(token),
            ":lease": n(expiresAtMs),
            ":exp": n(Math.floor(t / 1000) + windowSeconds),
            ":zero": n(0),
            ":one": n(1),
            ":nowSec": n(Math.floor(t / 1000)),
            ":nowMs": n(t),
            ...(payloadHash ? { ":hash": s(payloadHash) } : {}),
            ...(delivery ? { ":delivery": s(delivery) } : {}),
          },
          ReturnValues: "UPDATED_NEW",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      const attempt = Number(out.Attributes?.[A.attempts]?.N ?? 1);
      return { status: "claimed", lease: { key, token, expiresAtMs, attempt, ...deliveryOf(delivery) } };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const own = ownClaim(key, error.Item, [{ token, expiresAtMs }, ...(mine ? [mine] : [])], delivery);
      if (own) return own;
      return answerOf(key, decideRejectedClaim(parseExisting(error.Item), payloadHash, now(), delivery));
    }
  }

  function answerOf(key: string, decision: RejectedClaim): ClaimResult | "retry" {
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

  /** The common case, a key never seen: a PartiQL INSERT coalesced with other claims. */
  async function insertClaim(
    key: string,
    { payloadHash, delivery }: ClaimOptions,
  ): Promise<ClaimResult | { fallback: { token: string; expiresAtMs: number } }> {
    const t = now();
    const token = randomUUID();
    const expiresAtMs = t + leaseMs;
    const hashField = payloadHash ? `, '${A.payloadHash}': ?` : "";
    const deliveryField = delivery ? `, '${A.holder}': ?` : "";
    const r = await claims.execute({
      item: dedupPk(scope, key),
      statement: `INSERT INTO "${tableName}" VALUE {'${A.pk}': ?, '${A.status}': 'IN_PROGRESS', '${A.leaseToken}': ?, '${A.leaseExpiresAt}': ?, '${A.expiresAt}': ?, '${A.attempts}': 1${hashField}${deliveryField}}`,
      parameters: [
        s(dedupPk(scope, key)),
        s(token),
        n(expiresAtMs),
        n(Math.floor(t / 1000) + windowSeconds),
        ...(payloadHash ? [s(payloadHash)] : []),
        ...(delivery ? [s(delivery)] : []),
      ],
    });
    if (r.ok)
      return { status: "claimed", lease: { key, token, expiresAtMs, attempt: 1, ...deliveryOf(delivery) } };
    // DuplicateItem (INSERT returns no old image) or anything else: the conditional update decides.
    return { fallback: { token, expiresAtMs } };
  }

  /**
   * A key that exists (known here, or met by the INSERT): read it (strongly consistent, coalesced
   * into BatchGetItem), and write only when it is claimable. A duplicate so costs one read unit and
   * no write: before, the failed INSERT and the failed conditional update cost a write unit each,
   * the 0.15 write units per new message above 2 in `npm run bench -- --only sqs`.
   */
  async function claimExisting(
    key: string,
    options: ClaimOptions,
    mine: { token: string; expiresAtMs: number } | undefined,
  ): Promise<ClaimResult> {
    const item = await read(keyOf(key));
    const own = ownClaim(key, item, mine ? [mine] : [], options.delivery);
    if (own) return own;
    if (item) {
      const answer = answerOf(
        key,
        decideRejectedClaim(parseExisting(item), options.payloadHash, now(), options.delivery),
      );
      if (answer !== "retry") return answer;
    }
    return claimWithUpdate(key, options, mine);
  }

  async function claimFromTable(key: string, options: ClaimOptions): Promise<ClaimResult> {
    if (known.has(key)) return claimExisting(key, options, undefined);
    if (claimBatchSize > 1) {
      const inserted = await insertClaim(key, options);
      if (!("fallback" in inserted)) return inserted;
      return claimExisting(key, options, inserted.fallback);
    }
    return claimWithUpdate(key, options, undefined);
  }

  /** The conditional update: claims a key that is absent or claimable, and answers from ALL_OLD otherwise. */
  async function claimWithUpdate(
    key: string,
    options: ClaimOptions,
    mine: { token: string; expiresAtMs: number } | undefined,
  ): Promise<ClaimResult> {
    // "retry" only happens on a race with a concurrent release or clock skew; two tries settle it.
    const first = await claimOnce(key, options, mine);
    if (first !== "retry") return first;
    const second = await claimOnce(key, options);
    if (second !== "retry") return second;
    return { status: "in-progress", leaseExpiresAtMs: now() };
  }

  /**
   * Keys this process is claiming or holds. The store lives at container scope, and on Lambda
   * Managed Instances several invocations share it: a second claim of a key that another
   * invocation here is claiming is answered from that claim, and one that it holds is "in
   * progress", with no request. Without this both claims went into one BatchExecuteStatement and
   * DynamoDB rejected the whole request for its duplicate key, failing every claim in it.
   */
  const local = createLocalClaims(now);
  /** Keys seen in the table: a claim of one reads before it writes (knownKeys.ts). */
  const known = createKnownKeys();
  const read = createConsistentReader(client, tableName, (k) => k[A.pk]?.S ?? "");

  async function release(lease: Lease): Promise<void> {
    try {
      await client.send(
        new DeleteItemCommand({
          TableName: tableName,
          Key: keyOf(lease.key),
          ConditionExpression: "#token = :token AND #status = :inProgress",
          ExpressionAttributeNames: { "#token": A.leaseToken, "#status": A.status },
          ExpressionAttributeValues: { ":token": s(lease.token), ":inProgress": s("IN_PROGRESS") },
        }),
      );
    } catch (error) {
      // Someone else holds it now: nothing of ours to release.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    } finally {
      local.drop(lease);
    }
  }

  return {
    scope,
    tableName,

    claim: (key, claimOptions = {}) =>
      local.claim(key, claimOptions.delivery, async () => {
        const result = await claimFromTable(key, claimOptions);
        known.add(key); // claimed, a duplicate or in progress: the item is there
        return result;
      }),

    complete(lease, result) {
      // PartiQL so completions can be grouped; the WHERE clause is the fence (a missing item fails too).
      const withResult = result !== undefined;
      const statement = `UPDATE "${tableName}" SET "${A.status}" = 'COMPLETED' SET "${A.expiresAt}" = ?${
        withResult ? ` SET "${A.result}" = ?` : ""
      } REMOVE "${A.leaseExpiresAt}" WHERE "${A.pk}" = ? AND "${A.leaseToken}" = ?`;
      const parameters = [
        n(Math.floor(now() / 1000) + windowSeconds),
        ...(withResult ? [s(result)] : []),
        s(dedupPk(scope, lease.key)),
        s(lease.token),
      ];
      const written = completions.execute({ item: dedupPk(scope, lease.key), statement, parameters });
      // Held here until the completion settles: a claim meanwhile is "in progress", not a write.
      void written.then(
        () => local.drop(lease),
        () => local.drop(lease),
      );
      return written.then((r) => {
        if (r.ok) return;
        if (r.code === "ConditionalCheckFailed") {
          throw new LeaseLostError(`lease on '${lease.key}' in scope '${scope}' was lost before completion`);
        }
        throw new Error(`completion of '${lease.key}' in scope '${scope}' failed: ${r.code}: ${r.message}`);
      });
    },

    release,

    async recordRoute(lease, route) {
      if (!lease.delivery) return release(lease);
      try {
        // One conditional write in place of the release's delete; ROUTED frees the key for the next
        // delivery (the copy), and the routed set keeps every routed delivery of it recognisable.
        await client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: keyOf(lease.key),
            UpdateExpression:
              "SET #status = :routed, #route = :route, #exp = :exp REMOVE #lease ADD #routedBy :holder",
            ConditionExpression: "#token = :token AND #status = :inProgress",
            ExpressionAttributeNames: {
              ...names,
              "#route": A.route,
              "#routedBy": A.routedBy,
            },
            ExpressionAttributeValues: {
              ":routed": s("ROUTED"),
              ":route": s(route),
              ":exp": n(Math.floor(now() / 1000) + windowSeconds),
              ":holder": { SS: [lease.delivery] },
              ":token": s(lease.token),
              ":inProgress": s("IN_PROGRESS"),
            },
          }),
        );
        known.delete(lease.key);
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException)
          throw new LeaseLostError(
            `lease on '${lease.key}' in scope '${scope}' was lost before its route was recorded`,
          );
        throw error;
      } finally {
        local.drop(lease);
      }
    },

    async renew(lease, renewMs = leaseMs) {
      const expiresAtMs = now() + renewMs;
      try {
        await client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: keyOf(lease.key),
            UpdateExpression: "SET #lease = :lease",
            ConditionExpression: "#token = :token AND #status = :inProgress",
            ExpressionAttributeNames: {
              "#lease": A.leaseExpiresAt,
              "#token": A.leaseToken,
              "#status": A.status,
            },
            ExpressionAttributeValues: {
              ":lease": n(expiresAtMs),
              ":token": s(lease.token),
              ":inProgress": s("IN_PROGRESS"),
            },
          }),
        );
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) {
          local.drop(lease);
          throw new LeaseLostError(`lease on '${lease.key}' in scope '${scope}' was lost before renewal`);
        }
        throw error;
      }
      const renewed = { ...lease, expiresAtMs };
      local.renewed(renewed);
      return renewed;
    },

    flush: () => completions.flush(),
  };
}

/** The claims of one container's invocations on one store, by key. */
interface LocalClaims {
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

function createLocalClaims(now: () => number): LocalClaims {
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
