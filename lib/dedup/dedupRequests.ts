/**
 * The dedup store's DynamoDB requests, built from plain values (no client, no clock): the claim
 * (a conditional UpdateItem, or a PartiQL INSERT for a key never seen), the completion (a PartiQL
 * UPDATE, so completions can be grouped), the route record, the renewal and the release. Every
 * write after the claim is fenced by the lease token, so a holder whose lease was taken over
 * cannot touch the key any more.
 */
import type {
  AttributeValue,
  DeleteItemCommandInput,
  UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import { DEDUP_ATTR as A } from "./schema.ts";
import type { Statement } from "./statementBatcher.ts";

const n = (v: number): AttributeValue => ({ N: String(v) });
const s = (v: string): AttributeValue => ({ S: v });

/** The item of a dedup key, by its partition key (`dedupPk(scope, key)`). */
export const dedupItemKey = (pk: string): Record<string, AttributeValue> => ({ [A.pk]: s(pk) });

const names = {
  "#status": A.status,
  "#token": A.leaseToken,
  "#lease": A.leaseExpiresAt,
  "#exp": A.expiresAt,
};

/** What a claim writes, whichever request carries it. */
export interface ClaimWrite {
  readonly tableName: string;
  /** `dedupPk(scope, key)`. */
  readonly pk: string;
  /** The new lease's token (a UUID). */
  readonly token: string;
  /** When the new lease expires, epoch ms. */
  readonly expiresAtMs: number;
  /** The claim's clock reading, epoch ms. */
  readonly nowMs: number;
  /** How long the key is remembered (the TTL), in seconds. */
  readonly windowSeconds: number;
  readonly payloadHash: string | undefined;
  /** `ClaimOptions.delivery`. */
  readonly delivery: string | undefined;
}

/**
 * The conditional claim: takes a key that is absent or claimable, counts the attempt, and returns
 * the old item when the condition fails (ALL_OLD), so the failure says why.
 */
export function claimUpdate(w: ClaimWrite): UpdateItemCommandInput {
  const { payloadHash, delivery, nowMs: t } = w;
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
  return {
    TableName: w.tableName,
    Key: dedupItemKey(w.pk),
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
      ":token": s(w.token),
      ":lease": n(w.expiresAtMs),
      ":exp": n(Math.floor(t / 1000) + w.windowSeconds),
      ":zero": n(0),
      ":one": n(1),
      ":nowSec": n(Math.floor(t / 1000)),
      ":nowMs": n(t),
      ...(payloadHash ? { ":hash": s(payloadHash) } : {}),
      ...(delivery ? { ":delivery": s(delivery) } : {}),
    },
    ReturnValues: "UPDATED_NEW",
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  };
}

/** The claim of a key never seen: a PartiQL INSERT, which fails on any existing item (DuplicateItem). */
export function claimInsert(w: ClaimWrite): Statement {
  const { payloadHash, delivery } = w;
  const hashField = payloadHash ? `, '${A.payloadHash}': ?` : "";
  const deliveryField = delivery ? `, '${A.holder}': ?` : "";
  return {
    item: w.pk,
    statement: `INSERT INTO "${w.tableName}" VALUE {'${A.pk}': ?, '${A.status}': 'IN_PROGRESS', '${A.leaseToken}': ?, '${A.leaseExpiresAt}': ?, '${A.expiresAt}': ?, '${A.attempts}': 1${hashField}${deliveryField}}`,
    parameters: [
      s(w.pk),
      s(w.token),
      n(w.expiresAtMs),
      n(Math.floor(w.nowMs / 1000) + w.windowSeconds),
      ...(payloadHash ? [s(payloadHash)] : []),
      ...(delivery ? [s(delivery)] : []),
    ],
  };
}

/** A lease, as the fenced writes after the claim need it. */
export interface LeaseWrite {
  readonly tableName: string;
  /** `dedupPk(scope, key)`. */
  readonly pk: string;
  readonly token: string;
}

/**
 * COMPLETED, with the result when given, remembered for `windowSeconds` from `nowMs`. PartiQL so
 * completions can be grouped; the WHERE clause is the fence (a missing item fails too).
 */
export function completion(
  w: LeaseWrite & { readonly nowMs: number; readonly windowSeconds: number; readonly result?: string },
): Statement {
  const { result } = w;
  const withResult = result !== undefined;
  const statement = `UPDATE "${w.tableName}" SET "${A.status}" = 'COMPLETED' SET "${A.expiresAt}" = ?${
    withResult ? ` SET "${A.result}" = ?` : ""
  } REMOVE "${A.leaseExpiresAt}" WHERE "${A.pk}" = ? AND "${A.leaseToken}" = ?`;
  const parameters = [
    n(Math.floor(w.nowMs / 1000) + w.windowSeconds),
    ...(withResult ? [s(result)] : []),
    s(w.pk),
    s(w.token),
  ];
  return { item: w.pk, statement, parameters };
}

/**
 * ROUTED in place of the release's delete: frees the key for the next delivery (the copy), and
 * adds `delivery` to the routed set that keeps every routed delivery of it recognisable.
 */
export function routeUpdate(
  w: LeaseWrite & {
    readonly delivery: string;
    readonly route: string;
    readonly nowMs: number;
    readonly windowSeconds: number;
  },
): UpdateItemCommandInput {
  return {
    TableName: w.tableName,
    Key: dedupItemKey(w.pk),
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
      ":route": s(w.route),
      ":exp": n(Math.floor(w.nowMs / 1000) + w.windowSeconds),
      ":holder": { SS: [w.delivery] },
      ":token": s(w.token),
      ":inProgress": s("IN_PROGRESS"),
    },
  };
}

/** The lease's new expiry, epoch ms. */
export function renewUpdate(w: LeaseWrite & { readonly expiresAtMs: number }): UpdateItemCommandInput {
  return {
    TableName: w.tableName,
    Key: dedupItemKey(w.pk),
    UpdateExpression: "SET #lease = :lease",
    ConditionExpression: "#token = :token AND #status = :inProgress",
    ExpressionAttributeNames: {
      "#lease": A.leaseExpiresAt,
      "#token": A.leaseToken,
      "#status": A.status,
    },
    ExpressionAttributeValues: {
      ":lease": n(w.expiresAtMs),
      ":token": s(w.token),
      ":inProgress": s("IN_PROGRESS"),
    },
  };
}

/** Deletes the key while the lease still holds it, so a retry can claim it at once. */
export function releaseDelete(w: LeaseWrite): DeleteItemCommandInput {
  return {
    TableName: w.tableName,
    Key: dedupItemKey(w.pk),
    ConditionExpression: "#token = :token AND #status = :inProgress",
    ExpressionAttributeNames: { "#token": A.leaseToken, "#status": A.status },
    ExpressionAttributeValues: { ":token": s(w.token), ":inProgress": s("IN_PROGRESS") },
  };
}
