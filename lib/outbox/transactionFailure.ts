/**
 * What a failed TransactWriteItems of a unit of work means: a duplicate (the inbox marker was
 * there), only aggregate heads moved (learn them, send again), or a typed error (a business
 * condition, a conflict, throttling, a rejection). Pure: no client, so each case is testable alone.
 *
 * The cancellation reasons are aligned with the actions, the marker at [0], and carry the old item
 * of a failed condition (ReturnValuesOnConditionCheckFailure = ALL_OLD).
 */
import {
  type AttributeValue,
  type CancellationReason,
  TransactionCanceledException,
} from "@aws-sdk/client-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { KeyReuseError, PermanentError, TransientError } from "../core/errors.ts";
import {
  BusinessConditionFailedError,
  TransactionConflictError,
  TransactionRejectedError,
  TransactionThrottledError,
} from "./errors.ts";
import { OUTBOX_ATTR as A } from "./schema.ts";
import type { Staged } from "./stagedWrites.ts";

const THROTTLING = new Set(["ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"]);
const REJECTED = new Set(["ValidationError", "ItemCollectionSizeLimitExceeded"]);

function unmarshallOld(
  item: Record<string, AttributeValue> | undefined,
): Record<string, unknown> | undefined {
  return item ? unmarshall(item) : undefined;
}

/** What a failed commit means: a duplicate, a typed error, or heads to learn before the next attempt. */
export type Interpreted =
  | { readonly status: "duplicate"; readonly firstReceivedAt: number | undefined }
  | { readonly status: "error"; readonly error: Error }
  /**
   * Only aggregate heads stopped it: `learned` with the head as it is (its condition failed; ALL_OLD),
   * or a conflict with another transaction on it (try again after a moment).
   */
  | {
      readonly status: "head-moved";
      readonly heads: ReadonlyArray<{
        readonly pk: string;
        readonly learned: boolean;
        readonly item: Record<string, AttributeValue> | undefined;
      }>;
    };

/** Maps a failed TransactWriteItems to duplicate / moved heads / typed error. */
export function interpretFailure(
  error: unknown,
  staged: ReadonlyArray<Pick<Staged, "label" | "kind" | "onConditionFailed" | "pk">>,
  payloadHash: string | undefined,
  scope: string,
  id: string,
): Interpreted {
  const name = (error as { name?: string } | null)?.name;
  if (error instanceof TransactionCanceledException || name === "TransactionCanceledException") {
    const reasons: ReadonlyArray<CancellationReason> =
      (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [];
    const markerReason = reasons[0];
    if (markerReason?.Code === "ConditionalCheckFailed")
      return markerTaken(markerReason.Item, payloadHash, scope, id);
    const moved = headsMoved(reasons, staged);
    if (moved) return moved;
    return { status: "error", error: cancellationError(error, reasons, staged) };
  }
  return { status: "error", error: requestError(name, error) };
}

/** A cancellation that only aggregate heads caused (every other action's reason is `None`). */
function headsMoved(
  reasons: ReadonlyArray<CancellationReason>,
  staged: ReadonlyArray<Pick<Staged, "kind" | "pk">>,
): Extract<Interpreted, { status: "head-moved" }> | undefined {
  const heads: Array<{ pk: string; learned: boolean; item: Record<string, AttributeValue> | undefined }> = [];
  for (const [i, r] of reasons.entries()) {
    const code = r.Code ?? "None";
    if (code === "None") continue;
    const s = staged[i];
    const retryable = code === "ConditionalCheckFailed" || code === "TransactionConflict";
    if (s?.kind !== "head" || s.pk === undefined || !retryable) return undefined;
    heads.push({ pk: s.pk, learned: code === "ConditionalCheckFailed", item: r.Item });
  }
  return heads.length > 0 ? { status: "head-moved", heads } : undefined;
}

/** The inbox marker was there: a duplicate, or the same id reused for another payload. */
function markerTaken(
  old: Record<string, AttributeValue> | undefined,
  payloadHash: string | undefined,
  scope: string,
  id: string,
): Interpreted {
  const storedHash = old?.[A.payloadHash]?.S;
  if (payloadHash !== undefined && storedHash !== undefined && storedHash !== payloadHash) {
    return {
      status: "error",
      error: new KeyReuseError(
        `message id '${id}' in scope '${scope}' was already processed for a different payload (hash ${storedHash} ≠ ${payloadHash})`,
      ),
    };
  }
  const received = old?.[A.receivedAt]?.N;
  return { status: "duplicate", firstReceivedAt: received !== undefined ? Number(received) : undefined };
}

/** A cancelled transaction whose marker was free: a business condition, a conflict, throttling, a rejection. */
function cancellationError(
  error: unknown,
  reasons: ReadonlyArray<CancellationReason>,
  staged: ReadonlyArray<Pick<Staged, "label" | "kind" | "onConditionFailed">>,
): Error {
  const codes = reasons.map((r) => r.Code ?? "None");
  // A head's failed condition is never the handler's: with other reasons beside it, those decide.
  const failedIndex = codes.findIndex((c, i) => c === "ConditionalCheckFailed" && staged[i]?.kind !== "head");
  if (failedIndex > 0) {
    const s = staged[failedIndex];
    const existing = unmarshallOld(reasons[failedIndex]?.Item);
    const label = s?.label ?? `action#${failedIndex}`;
    return s?.onConditionFailed?.(existing) ?? new BusinessConditionFailedError(label, existing);
  }
  const summary = codes.map((c, i) => `${staged[i]?.label ?? i}=${c}`).join(", ");
  if (codes.includes("TransactionConflict")) {
    return new TransactionConflictError(`transaction conflicted with a concurrent write (${summary})`, {
      cause: error,
    });
  }
  if (codes.some((c) => THROTTLING.has(c)))
    return new TransactionThrottledError(`transaction throttled (${summary})`, { cause: error });
  if (codes.some((c) => REJECTED.has(c))) {
    const messages = reasons
      .filter((r) => r.Code && REJECTED.has(r.Code))
      .map((r) => `${r.Code}: ${r.Message ?? ""}`);
    return new TransactionRejectedError(`DynamoDB rejected the transaction (${summary})`, messages);
  }
  return new TransientError(`transaction cancelled (${summary || "no reasons given"})`, { cause: error });
}

/** A TransactWriteItems request that failed as a whole. */
function requestError(name: string | undefined, error: unknown): Error {
  switch (name) {
    case "TransactionInProgressException":
      return new TransactionConflictError("the same transaction is still in progress", { cause: error });
    case "ProvisionedThroughputExceededException":
    case "ThrottlingException":
    case "RequestLimitExceeded":
      return new TransactionThrottledError(`transaction throttled (${name})`, { cause: error });
    case "ValidationException":
    case "IdempotentParameterMismatchException":
    case "ResourceNotFoundException":
      return new TransactionRejectedError(
        `DynamoDB rejected the transaction (${name}): ${(error as Error).message}`.slice(0, 600),
        [name],
      );
  }
  return error instanceof Error ? error : new TransientError(String(error));
}

/** True for the errors a retry of the same message may cure. */
export function isRetryableUnitOfWorkError(error: unknown): boolean {
  return !(error instanceof PermanentError);
}
