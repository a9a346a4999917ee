/**
 * The dedup stages both consumers share, over a batch plan: claim ahead, take the claim when the
 * record starts (renewing an aged one), run the effect under a kept lease, give back what was not
 * used, and wait for the completions. Talks to DynamoDB only through the `DedupStore`.
 */

import type { Envelope } from "../core/envelope.ts";
import { DeliveryInProgressError, InProgressElsewhereError, LeaseLostError } from "../core/errors.ts";
import { keepLease, renewIfAged } from "../core/leaseKeeper.ts";
import type { DedupStore, Lease } from "../dedup/dedupStore.ts";
import type { ClaimAnswer, RecordPlan } from "./batchPlan.ts";
import { beforeDeadline } from "./lambdaDeadline.ts";

export interface ClaimDeps {
  readonly dedup: DedupStore;
  readonly payloadHashOf: (envelope: Envelope) => string | undefined;
  readonly now: () => number;
  /** The claim's delivery (`ClaimOptions.delivery`): Kafka gives the record's coordinates. @default none */
  readonly deliveryOf?: (envelope: Envelope) => string | undefined;
}

/** What a record may do once its claim is in. */
export type ClaimVerdict =
  | { readonly kind: "run" }
  | { readonly kind: "duplicate"; readonly storedResult: string | undefined }
  /** This delivery was routed on before (a redelivery of a record already on a retry topic or the DLQ). */
  | { readonly kind: "routed"; readonly route: string }
  /**
   * Another invocation holds the key; `retryAtMs` is when its lease ends, when known. The error is
   * a DeliveryInProgressError when it holds it under this very delivery (`ClaimResult.sameDelivery`).
   */
  | { readonly kind: "held"; readonly error: InProgressElsewhereError; readonly retryAtMs?: number }
  | { readonly kind: "failed"; readonly error: unknown };

type AnyPlan = RecordPlan<unknown, unknown>;

function claimOf(plan: AnyPlan, deps: ClaimDeps): Promise<ClaimAnswer> {
  if (!plan.decoded.ok) throw new TypeError("only a decoded record can be claimed");
  const envelope = plan.decoded.envelope;
  const payloadHash = deps.payloadHashOf(envelope);
  const delivery = deps.deliveryOf?.(envelope);
  return deps.dedup
    .claim(envelope.id, {
      ...(payloadHash ? { payloadHash } : {}),
      ...(delivery ? { delivery } : {}),
      envelope,
    })
    .then(
      (claim): ClaimAnswer => {
        if (claim.status === "claimed")
          plan.lease = { lease: claim.lease, grantedMs: claim.lease.expiresAtMs - deps.now() };
        return claim;
      },
      (error: unknown): ClaimAnswer => ({ status: "error", error }),
    );
}

/** Claims every eligible record's key at once; the store coalesces new keys into few requests. */
export function claimAhead<P extends AnyPlan>(
  plans: ReadonlyArray<P>,
  deps: ClaimDeps,
  eligible: (p: P) => boolean,
) {
  for (const plan of plans) if (eligible(plan)) plan.claim = claimOf(plan, deps);
}

/** The record's claim (taken ahead, or now), with an aged lease renewed before the effect starts. */
export async function takeClaim(plan: AnyPlan, deps: ClaimDeps): Promise<ClaimVerdict> {
  const id = plan.decoded.ok ? plan.decoded.envelope.id : "";
  const claim = await (plan.claim ?? claimOf(plan, deps));
  if (claim.status === "error") return { kind: "failed", error: claim.error };
  if (claim.status === "duplicate") return { kind: "duplicate", storedResult: claim.result };
  if (claim.status === "routed") return { kind: "routed", route: claim.route };
  if (claim.status === "in-progress") {
    return {
      kind: "held",
      error: claim.sameDelivery
        ? new DeliveryInProgressError(`this delivery of '${id}' is being processed by another invocation`)
        : new InProgressElsewhereError(`'${id}' is being processed by another invocation`),
      retryAtMs: claim.leaseExpiresAtMs,
    };
  }
  const held = plan.lease ?? { lease: claim.lease, grantedMs: claim.lease.expiresAtMs - deps.now() };
  try {
    const lease = await renewIfAged(held.lease, held.grantedMs, renewer(deps.dedup), deps.now());
    plan.lease = { lease, grantedMs: held.grantedMs };
    return { kind: "run" };
  } catch (error) {
    plan.lease = undefined;
    if (error instanceof LeaseLostError) {
      return {
        kind: "held",
        error: new InProgressElsewhereError(`'${id}' was claimed elsewhere while it waited`, {
          cause: error,
        }),
      };
    }
    return { kind: "failed", error };
  }
}

const renewer = (dedup: DedupStore) => (lease: Lease, ms: number) => dedup.renew(lease, ms);

export type EffectResult =
  | { readonly ok: true; readonly result: unknown }
  | { readonly ok: false; readonly error: unknown };

export interface EffectHooks {
  /** Keep the lease alive while the effect runs. @default true */
  readonly keepAlive?: boolean;
  /** What to keep of the result in the dedup record (`storeResult`). */
  readonly resultToStore: (result: unknown) => string | undefined;
  readonly onLeaseLost: (error: unknown) => void;
  readonly onRenewError: (error: unknown) => void;
  readonly onReleaseError: (error: unknown) => void;
  /**
   * A failed effect keeps its lease on the plan instead of giving it back at once: the adapter may
   * route the record on, and then records the route with that lease (`settleLeases`). @default false
   */
  readonly keepOnFailure?: boolean;
}

/**
 * Runs the effect while the lease is kept alive. A failed effect gives its key back at once, so a
 * retry can claim it; a successful one starts its fenced completion (grouped with others, not
 * awaited here, so a slot is not held while the group fills; awaited before the batch answers).
 */
export async function runWithLease(
  plan: AnyPlan,
  deps: ClaimDeps | undefined,
  hooks: EffectHooks,
  effect: () => Promise<unknown>,
): Promise<EffectResult> {
  const held = plan.lease;
  const keeper =
    deps && held && hooks.keepAlive !== false
      ? keepLease({
          lease: held.lease,
          grantedMs: held.grantedMs,
          renew: renewer(deps.dedup),
          now: deps.now,
          isLost: (error) => error instanceof LeaseLostError,
          onLost: (error) => {
            hooks.onLeaseLost(error);
            plan.abort.abort(error);
          },
          onError: hooks.onRenewError,
        })
      : undefined;
  let outcome: EffectResult;
  try {
    outcome = { ok: true, result: await effect() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  keeper?.stop();
  if (!deps || !held) return outcome;
  const lease = keeper?.current() ?? held.lease;
  plan.lease = undefined;
  if (outcome.ok) {
    plan.completion = deps.dedup.complete(lease, hooks.resultToStore(outcome.result));
    // Awaited by `settleCompletions`, unless the record was abandoned at the cut-off and finished
    // later: then nobody awaits it, and its failure must not become an unhandled rejection.
    plan.completion.catch(() => undefined);
  } else if (hooks.keepOnFailure) plan.lease = { lease, grantedMs: held.grantedMs };
  else await deps.dedup.release(lease).catch(hooks.onReleaseError);
  return outcome;
}

/**
 * Claims of records that never reached their effect (skipped, held back, out of time, followers)
 * are given back, so their redelivery or retry copy can claim at once.
 */
export async function releaseUnused<P extends AnyPlan>(
  plans: ReadonlyArray<P>,
  dedup: DedupStore | undefined,
  onError: (plan: P, error: unknown) => void,
): Promise<void> {
  await Promise.all(plans.map((p) => p.claim));
  await Promise.all(
    plans.map(async (p) => {
      const held = p.lease;
      if (!dedup || !held) return;
      p.lease = undefined;
      await dedup.release(held.lease).catch((error: unknown) => onError(p, error));
    }),
  );
}

/**
 * Waits for every completion, until `deadline` aborts at the latest; returns the records whose
 * completion failed or did not answer in time, with why.
 */
export async function settleCompletions<P extends AnyPlan>(
  plans: ReadonlyArray<P>,
  dedup: DedupStore | undefined,
  deadline?: AbortSignal,
): Promise<Array<{ plan: P; error: unknown }>> {
  const pending = plans.filter((p) => p.completion);
  if (!dedup || pending.length === 0) return [];
  const bounded = <T>(work: Promise<T>) => (deadline ? beforeDeadline(work, deadline) : work);
  await bounded(dedup.flush()).catch(() => undefined);
  const settled = await Promise.allSettled(pending.map((p) => bounded(p.completion!)));
  return settled.flatMap((r, k) => (r.status === "rejected" ? [{ plan: pending[k]!, error: r.reason }] : []));
}

/**
 * The claim of a record that could not be decoded, under a key the adapter derives from the record
 * itself (Kafka: its coordinates), so that its route (the DLQ, or its key's retry path) is recorded
 * and recognised on redelivery like any other's. `routed` when this delivery was routed before;
 * otherwise the lease, if one was granted, is on the plan. A claim that fails proves nothing: the
 * record is routed as before, only without the record of it.
 */
export async function claimUndecoded(
  plan: AnyPlan,
  claim: { readonly key: string; readonly delivery: string },
  deps: ClaimDeps,
): Promise<{ readonly routed: string } | undefined> {
  const result = await deps.dedup.claim(claim.key, { delivery: claim.delivery }).catch(() => undefined);
  if (result?.status === "routed") return { routed: result.route };
  if (result?.status === "claimed")
    plan.lease = { lease: result.lease, grantedMs: result.lease.expiresAtMs - deps.now() };
  return undefined;
}

/**
 * The leases still held once the adapter's after-run step is over are those of records routed on:
 * each gets its route recorded (`DedupStore.recordRoute`) when `routeOf` says the copy is out, and
 * is released otherwise (the produce failed: the record is redelivered and routed then). Returns
 * the records whose route could not be recorded, with why.
 */
export async function settleLeases<P extends AnyPlan>(
  plans: ReadonlyArray<P>,
  dedup: DedupStore | undefined,
  routeOf: ((plan: P) => string | undefined) | undefined,
  onReleaseError: (plan: P, error: unknown) => void,
): Promise<Array<{ plan: P; error: unknown }>> {
  if (!dedup) return [];
  const failed: Array<{ plan: P; error: unknown }> = [];
  await Promise.all(
    plans.map(async (p) => {
      const held = p.lease;
      if (!held) return;
      p.lease = undefined;
      const route = routeOf?.(p);
      if (route === undefined || !dedup.recordRoute)
        return dedup.release(held.lease).catch((error: unknown) => onReleaseError(p, error));
      return dedup
        .recordRoute(held.lease, route)
        .catch((error: unknown) => void failed.push({ plan: p, error }));
    }),
  );
  return failed;
}
