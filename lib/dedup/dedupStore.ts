import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Envelope } from "../core/envelope.ts";
import { createConsistentReader } from "./consistentReads.ts";
import { claimFromTable } from "./dedupClaims.ts";
import { createKnownKeys } from "./knownKeys.ts";
import { completeLease, recordLeaseRoute, releaseLease, renewLease } from "./leaseWrites.ts";
import { createLocalClaims } from "./localClaims.ts";
import { DEDUP_ATTR as A, DEDUP_DEFAULTS } from "./schema.ts";
import { type BatchingOptions, DYNAMODB_BATCH_LIMIT, StatementBatcher } from "./statementBatcher.ts";

/** Options of `createDedupStore`. */
export interface DedupStoreOptions {
  /** The dedup table's name: partition key `pk` (a string, `<scope>#<key>`), TTL on `expiresAt` (`DedupTable` makes one). */
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
  /** The dedup key claimed (without the scope). */
  readonly key: string;
  /** The lease's fencing token (a random UUID): every write after the claim is conditional on it. */
  readonly token: string;
  /** When the lease ends unless renewed, epoch ms; after it another claim may take the key. */
  readonly expiresAtMs: number;
  /** Which claim of the key this is, counted in the table from 1 (a redelivery or a retry counts). */
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
  /** The dedup scope (the consumer) every key of this store is claimed in. */
  readonly scope: string;
  /** The dedup table's name. */
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

/**
 * Creates a dedup store on a DynamoDB table. The stages are modules of their own: dedupClaims.ts
 * (the claim, by the cheapest path), leaseWrites.ts (complete, release, route, renew),
 * dedupRequests.ts (the requests, pure), localClaims.ts (claims shared by this container's
 * concurrent invocations) and dedupDecision.ts (what an existing item means for a claim).
 */
export function createDedupStore(options: DedupStoreOptions): DedupStore {
  const client = options.client ?? new DynamoDBClient({});
  const leaseMs = options.leaseMs ?? DEDUP_DEFAULTS.leaseMs;
  const windowSeconds = options.windowSeconds ?? DEDUP_DEFAULTS.windowSeconds;
  const now = options.now ?? Date.now;
  const { tableName, scope } = options;
  const completions = new StatementBatcher(client, options.completion ?? {}, 10);
  const claimBatchSize = options.claims?.maxBatch ?? DYNAMODB_BATCH_LIMIT;
  const inserts = new StatementBatcher(client, options.claims ?? {}, 2);
  // Container scope, shared by concurrent invocations (Lambda Managed Instances): the claims this
  // process is making or holds (localClaims.ts), and the keys it has seen in the table (knownKeys.ts).
  const local = createLocalClaims(now);
  const known = createKnownKeys();
  const read = createConsistentReader(client, tableName, (k) => k[A.pk]?.S ?? "");
  const common = { client, tableName, scope, windowSeconds, now };
  const claimDeps = { ...common, leaseMs, inserts, coalesce: claimBatchSize > 1, known, read };
  const leaseDeps = { ...common, completions, local, known };

  return {
    scope,
    tableName,
    claim: (key, claimOptions = {}) =>
      local.claim(key, claimOptions.delivery, async () => {
        const result = await claimFromTable(claimDeps, key, claimOptions);
        known.add(key); // claimed, a duplicate or in progress: the item is there
        return result;
      }),
    complete: (lease, result) => completeLease(leaseDeps, lease, result),
    release: (lease) => releaseLease(leaseDeps, lease),
    recordRoute: (lease, route) => recordLeaseRoute(leaseDeps, lease, route),
    renew: (lease, renewMs = leaseMs) => renewLease(leaseDeps, lease, renewMs),
    flush: () => completions.flush(),
  };
}
