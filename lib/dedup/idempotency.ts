import { createHash } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type ConsumerEnv, readConsumerEnv } from "../core/consumerEnv.ts";
import type { Envelope } from "../core/envelope.ts";
import { ConsumerConfigError } from "../core/errors.ts";
import { createDedupStore, type DedupStore, type DedupStoreOptions } from "./dedupStore.ts";
import { createPowertoolsCutover, type PowertoolsCutoverOptions } from "./powertoolsCutover.ts";

/**
 * A consumer's idempotency settings. `tableName` defaults to `DEDUP_TABLE_NAME`, `windowSeconds`
 * to `DEDUP_WINDOW_SECONDS` (the window the CDK constructs check against the retry paths), then
 * `DEDUP_DEFAULTS`. `scope` defaults to the consumer's name (see `createIdempotency`).
 */
export interface IdempotencyOptions extends Partial<Omit<DedupStoreOptions, "client">> {
  /** Also reject a known key that arrives with a different payload (key reuse). `true` hashes the raw body. */
  readonly payloadHash?: boolean | ((envelope: Envelope) => string);
  /**
   * Keep the handler's return value (JSON, at most 4 KB) in the dedup record, and hand it to the
   * consumer's `onDuplicate` when a duplicate of the record arrives (to answer it as the first run
   * did). @default false
   */
  readonly storeResult?: boolean;
  /**
   * Moving from Powertools' idempotency: during a window, a key this consumer is about to run is
   * first looked up in Powertools' table, and one Powertools completed is not run again (one
   * strongly consistent read per key new to our table, none once the window ends).
   * See docs/migrating-from-powertools.md. @default - none
   */
  readonly powertoolsCutover?: PowertoolsCutoverOptions;
}

/**
 * A consumer's `onDuplicate`: called for a record the dedup store already has as done, with the
 * first run's return value when `storeResult` kept it (else `undefined`).
 */
export type DuplicateHandler<T, C> = (
  envelope: Envelope<T>,
  ctx: C & { readonly storedResult: unknown },
) => Promise<void> | void;

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
  /** A stored result as the handler returned it (`undefined` when none was kept). */
  storedResultOf(stored: string | undefined): unknown;
}

/**
 * The per-container half of a consumer's idempotency: built once, used by every batch. The
 * environment is read here, once, and a missing table fails here, when the handler is created.
 *
 * The scope (the consumer whose keys these are; two consumers of one event must both process it):
 * `scope` if given, else the `defaultScope` the consumer passes, which is its `consumer` option or
 * `CONSUMER_NAME` (set by `ConsumerFunction` from its `consumerName`, so it survives a deploy that
 * replaces the function), and only outside the constructs, with neither set, the function name.
 */
export function createIdempotency(
  setting: IdempotencySetting,
  client: DynamoDBClient,
  env: ConsumerEnv = readConsumerEnv(),
): Idempotency {
  const stores = new Map<string, DedupStore>();
  const shared = setting && "claim" in setting ? setting : undefined;
  const options = setting && !("claim" in setting) ? setting : undefined;
  const tableName = options?.tableName ?? env.dedupTableName;
  const windowSeconds = options?.windowSeconds ?? env.dedupWindowSeconds;
  if (setting !== false && !shared && !tableName) {
    throw new ConsumerConfigError(
      "idempotency needs a table: set the DEDUP_TABLE_NAME environment variable, or idempotency.tableName (or idempotency: false)",
    );
  }
  const cutover =
    options?.powertoolsCutover &&
    createPowertoolsCutover(options.powertoolsCutover, client, options.now ?? Date.now);
  return {
    storeFor(defaultScope) {
      if (setting === false) return undefined;
      if (shared) return shared;
      const scope = options?.scope ?? defaultScope;
      const id = `${tableName}/${scope}`;
      let store = stores.get(id);
      if (!store) {
        store = createDedupStore({
          ...options,
          ...(windowSeconds !== undefined ? { windowSeconds } : {}),
          tableName: tableName!,
          scope,
          client,
        });
        if (cutover) store = cutover(store);
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
    storedResultOf(stored) {
      if (stored === undefined) return undefined;
      try {
        return JSON.parse(stored);
      } catch {
        return undefined;
      }
    },
  };
}
