/**
 * What the holder of a dedup lease writes after its claim: the completion (grouped with other
 * completions), the release, the route record and the renewal. Each is fenced by the lease's token
 * (dedupRequests.ts), and each tells this container's local claims (localClaims.ts) when the
 * table decides about the key again.
 */
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { LeaseLostError } from "../core/errors.ts";
import { completion, releaseDelete, renewUpdate, routeUpdate } from "./dedupRequests.ts";
import type { Lease } from "./dedupStore.ts";
import type { KnownKeys } from "./knownKeys.ts";
import type { LocalClaims } from "./localClaims.ts";
import { dedupPk } from "./schema.ts";
import type { StatementBatcher } from "./statementBatcher.ts";

/** What the lease writes need of their store. */
export interface LeaseDeps {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly scope: string;
  /** How long a key is remembered (the TTL), in seconds. */
  readonly windowSeconds: number;
  readonly now: () => number;
  /** Groups completions into BatchExecuteStatement calls. */
  readonly completions: StatementBatcher;
  readonly local: LocalClaims;
  readonly known: KnownKeys;
}

/** The lease's item and token, as every fenced write names them. */
const fence = (deps: LeaseDeps, lease: Lease) => ({
  tableName: deps.tableName,
  pk: dedupPk(deps.scope, lease.key),
  token: lease.token,
});

/** Fenced; grouped with other completions. Rejects with LeaseLostError if the lease was taken over. */
export function completeLease(deps: LeaseDeps, lease: Lease, result: string | undefined): Promise<void> {
  const { scope, local } = deps;
  const statement = completion({
    ...fence(deps, lease),
    nowMs: deps.now(),
    windowSeconds: deps.windowSeconds,
    result,
  });
  const written = deps.completions.execute(statement);
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
}

/** Fenced delete, so a retry can claim at once. A lost lease is not an error here. */
export async function releaseLease(deps: LeaseDeps, lease: Lease): Promise<void> {
  try {
    await deps.client.send(new DeleteItemCommand(releaseDelete(fence(deps, lease))));
  } catch (error) {
    // Someone else holds it now: nothing of ours to release.
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  } finally {
    deps.local.drop(lease);
  }
}

/**
 * Fenced, in place of the release for a delivery sent on (a retry topic, the DLQ): one conditional
 * write in place of the release's delete. ROUTED frees the key for the next delivery (the copy),
 * and the routed set keeps every routed delivery of it recognisable. A lease without a delivery
 * is released.
 */
export async function recordLeaseRoute(deps: LeaseDeps, lease: Lease, route: string): Promise<void> {
  if (!lease.delivery) return releaseLease(deps, lease);
  try {
    await deps.client.send(
      new UpdateItemCommand(
        routeUpdate({
          ...fence(deps, lease),
          delivery: lease.delivery,
          route,
          nowMs: deps.now(),
          windowSeconds: deps.windowSeconds,
        }),
      ),
    );
    deps.known.delete(lease.key);
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException)
      throw new LeaseLostError(
        `lease on '${lease.key}' in scope '${deps.scope}' was lost before its route was recorded`,
      );
    throw error;
  } finally {
    deps.local.drop(lease);
  }
}

/** Fenced lease extension by `renewMs` from now. Rejects with LeaseLostError. */
export async function renewLease(deps: LeaseDeps, lease: Lease, renewMs: number): Promise<Lease> {
  const expiresAtMs = deps.now() + renewMs;
  try {
    await deps.client.send(new UpdateItemCommand(renewUpdate({ ...fence(deps, lease), expiresAtMs })));
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      deps.local.drop(lease);
      throw new LeaseLostError(`lease on '${lease.key}' in scope '${deps.scope}' was lost before renewal`);
    }
    throw error;
  }
  const renewed = { ...lease, expiresAtMs };
  deps.local.renewed(renewed);
  return renewed;
}
