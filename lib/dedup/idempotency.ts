import { createHash } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Envelope } from "../core/envelope.ts";
import { createDedupStore, type DedupStore, type DedupStoreOptions } from "./dedupStore.ts";

/** A consumer's idempotency settings; `tableName` defaults to DEDUP_TABLE_NAME. */
export interface IdempotencyOptions extends Partial<Omit<DedupStoreOptions, "client">> {
  /** Also reject a known key that arrives with a different payload (key reuse). `true` hashes the raw body. */
  readonly payloadHash?: boolean | ((envelope: Envelope) => string);
  /** Keep the handler's return value (JSON, at most 4 KB) in the dedup record. @default false */
  readonly storeResult?: boolean;
}

/** Options, a shared store, or `false` for handlers that are idempotent by nature. */
export type IdempotencySetting = IdempotencyOptions | DedupStore | false | undefined;

const MAX_STORED_RESULT = 4096;

export interface Idempotency {
  /** The store for this consumer (cached per table and scope across invocations), or none. */
  storeFor(defaultScope: string): DedupStore | undefined;
  /** The payload hash for key-reuse detection, when enabled. */
  payloadHashOf(envelope: Envelope): string | undefined;
  /** What to keep of a handler's result, when enabled and small enough. */
  resultToStore(result: unknown): string | undefined;
}

/** The per-container half of a consumer's idempotency: built once, used by every batch. */
export function createIdempotency(setting: IdempotencySetting, client: DynamoDBClient): Idempotency {
  const stores = new Map<string, DedupStore>();
  const options = setting && !("claim" in setting) ? setting : undefined;
  return {
    storeFor(defaultScope) {
      if (setting === false) return undefined;
      if (setting && "claim" in setting) return setting;
      const tableName = options?.tableName ?? process.env.DEDUP_TABLE_NAME;
      if (!tableName)
        throw new Error("idempotency needs a table: set DEDUP_TABLE_NAME or idempotency.tableName");
      const scope = options?.scope ?? defaultScope;
      const id = `${tableName}/${scope}`;
      let store = stores.get(id);
      if (!store) {
        store = createDedupStore({ ...options, tableName, scope, client });
        stores.set(id, store);
      }
      return store;
    },
    payloadHashOf(envelope) {
      if (!options?.payloadHash) return undefined;
      if (typeof options.payloadHash === "function") return options.payloadHash(envelope);
      return createHash("sha256").update(envelope.raw).digest("base64url");
    },
    resultToStore(result) {
      if (!options?.storeResult || result === undefined) return undefined;
      // Called after the effect: a result that can't be serialised (a BigInt, a cycle) is not kept,
      // and must never turn a success into a failure that runs the effect again.
      let json: string | undefined;
      try {
        json = JSON.stringify(result);
      } catch {
        return undefined;
      }
      return json !== undefined && json.length <= MAX_STORED_RESULT ? json : undefined;
    },
  };
}
