/**
 * The cut-over from Powertools' idempotency to ours: for a while after a consumer moves from
 * Powertools' `BatchProcessor` + `makeIdempotent` to ours, a key ours is about to run is first
 * looked up in Powertools' table, so that a message Powertools already completed (redelivered
 * because its ack was lost, or resent by its producer) does not run again.
 *
 * Why a read at claim time, and not a copy of Powertools' table into ours before the switch:
 * Powertools stores a hash of the key, which cannot be turned back into the key ours stores, and a
 * copy taken before the switch misses what Powertools completes after it (its last invocations
 * still run while ours starts). The read costs nothing where ours already knows the answer:
 *
 * - only a claim that ours granted is looked up: a key ours has completed, or that a live lease
 *   of ours holds, is answered by our own table (and by this container's claims) with no read;
 * - the look-ups are strongly consistent single-item reads coalesced into BatchGetItem (up to 100
 *   keys a request), 1 read unit per key of at most 4 KB ("BatchGetItem ... processes each item in
 *   the batch as an individual GetItem request", DynamoDB Developer Guide, read-write-operations);
 * - once `until` has passed, a claim is ours alone: no request to Powertools' table at all.
 *
 * What Powertools left decides the claim (`powertoolsVerdict`): COMPLETED and unexpired → ours
 * marks the key completed in its own table (so every later copy is answered there, with no read)
 * and answers a duplicate; a lock Powertools would still honour → ours gives its claim back and
 * answers "in progress" until the lock ends (the record is retried then, not run now, and does
 * not use up its receives); anything else → ours runs it.
 */
import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Envelope } from "../core/envelope.ts";
import { ConsumerConfigError } from "../core/errors.ts";
import { createConsistentReader } from "./consistentReads.ts";
import type { ClaimResult, DedupStore, Lease } from "./dedupStore.ts";
import {
  type PowertoolsAttributes,
  type PowertoolsRecord,
  powertoolsAttributeNames,
  powertoolsIdempotencyKey,
  powertoolsVerdict,
} from "./powertoolsRecord.ts";

/**
 * Reading Powertools' idempotency records as completed during a cut-over window
 * (`IdempotencyOptions.powertoolsCutover`). See docs/migrating-from-powertools.md.
 */
export interface PowertoolsCutoverOptions extends PowertoolsAttributes {
  /** Powertools' idempotency table: the `tableName` of its `DynamoDBPersistenceLayer`. */
  readonly tableName: string;
  /**
   * Powertools' key prefix: the `keyPrefix` passed to `makeIdempotent`, else the name of the
   * Lambda function that ran Powertools (its `AWS_LAMBDA_FUNCTION_NAME`). A wrong prefix finds no
   * record, and every redelivered message runs again: take it from a key in Powertools' table
   * (the part before `#`).
   */
  readonly keyPrefix: string;
  /**
   * What Powertools hashed for a record: the value its `eventKeyJmesPath` selected. For
   * `"messageId"`, the SQS message id (`envelope.source.messageId`); for
   * `"powertools_json(body).orderId"`, `JSON.parse(envelope.raw).orderId` (or the parsed body's
   * `orderId` when no schema changes it). `undefined` or `null`: Powertools kept no record for it
   * (it skips idempotency when the selection is empty), so none is read.
   */
  readonly data: (envelope: Envelope) => unknown;
  /**
   * The end of the window (an ISO 8601 time, a `Date`, or epoch milliseconds): from then on no
   * Powertools record is read. Set it to the cut-over time + the Powertools function's timeout +
   * Powertools' `expiresAfterSeconds` (1 hour by default): after that every Powertools record has
   * expired, and would not stop Powertools itself either.
   */
  readonly until: Date | string | number;
  /** Powertools' `IdempotencyConfig.hashFunction`. @default "md5" */
  readonly hashFunction?: string;
}

/** Wraps a store so that its claims consult Powertools' table during the window. */
export type PowertoolsCutover = (store: DedupStore) => DedupStore;

function untilMsOf(until: PowertoolsCutoverOptions["until"]): number {
  const ms = until instanceof Date ? until.getTime() : typeof until === "number" ? until : Date.parse(until);
  if (!Number.isFinite(ms)) {
    throw new ConsumerConfigError(
      `idempotency.powertoolsCutover.until must be a time (ISO 8601, a Date or epoch ms), got '${String(until)}'`,
    );
  }
  return ms;
}

/**
 * Checks the options once, when the consumer is created, and builds the reader shared by every
 * store it wraps (container scope: its queue is synchronous, safe under concurrent invocations).
 */
export function createPowertoolsCutover(
  options: PowertoolsCutoverOptions,
  client: DynamoDBClient,
  now: () => number,
): PowertoolsCutover {
  const untilMs = untilMsOf(options.until);
  if (!options.tableName || !options.keyPrefix?.trim()) {
    throw new ConsumerConfigError("idempotency.powertoolsCutover needs a tableName and a keyPrefix");
  }
  const names = powertoolsAttributeNames(options.keyPrefix, options);
  const idAttr = names.sortKeyAttr ?? names.keyAttr;
  const read = createConsistentReader(client, options.tableName, (item) => item[idAttr]?.S ?? "", {
    // The key (to match answers to reads) and the three attributes that decide; never `data`.
    projection: `#id, #status, #exp, #ipe${names.sortKeyAttr ? ", #pk" : ""}`,
    names: {
      "#id": idAttr,
      "#status": names.statusAttr,
      "#exp": names.expiryAttr,
      "#ipe": names.inProgressExpiryAttr,
      ...(names.sortKeyAttr ? { "#pk": names.keyAttr } : {}),
    },
  });
  const keyOf = (key: string): Record<string, AttributeValue> =>
    names.sortKeyAttr
      ? { [names.keyAttr]: { S: names.staticPkValue }, [names.sortKeyAttr]: { S: key } }
      : { [names.keyAttr]: { S: key } };
  const num = (v: AttributeValue | undefined) => (v?.N === undefined ? undefined : Number(v.N));
  const recordOf = (item: Record<string, AttributeValue> | undefined): PowertoolsRecord | undefined =>
    item && {
      status: item[names.statusAttr]?.S,
      expiresAtSec: num(item[names.expiryAttr]),
      inProgressUntilMs: num(item[names.inProgressExpiryAttr]),
    };

  /** The verdict for a key ours has just claimed; the claim is given back if the read fails. */
  async function settle(store: DedupStore, lease: Lease, envelope: Envelope): Promise<ClaimResult> {
    let record: PowertoolsRecord | undefined;
    try {
      const data = options.data(envelope);
      // Powertools skipped idempotency for an empty selection: it has no record to read.
      if (data === undefined || data === null) return { status: "claimed", lease };
      record = recordOf(
        await read(keyOf(powertoolsIdempotencyKey(options.keyPrefix, data, options.hashFunction))),
      );
    } catch (error) {
      // A failed read proves nothing: the record is retried, and its key is free for the retry.
      await store.release(lease).catch(() => undefined);
      throw error;
    }
    const verdict = powertoolsVerdict(record, now());
    switch (verdict.kind) {
      case "free":
        return { status: "claimed", lease };
      case "completed":
        // Recorded in our table, so later copies are answered there with no read. Should this
        // write fail, the key stays ours until the lease expires; the claim that takes it over
        // then reads Powertools' record again (every granted claim does), and completes it.
        await store.complete(lease).catch(() => undefined);
        return { status: "duplicate", result: undefined };
      case "in-progress":
        // Given back at once; a release that fails leaves a lease that expires by itself.
        await store.release(lease).catch(() => undefined);
        return { status: "in-progress", leaseExpiresAtMs: verdict.untilMs };
    }
  }

  return (store): DedupStore => ({
    scope: store.scope,
    tableName: store.tableName,
    async claim(key, claimOptions) {
      const result = await store.claim(key, claimOptions);
      // Every granted claim is checked, a takeover too: its previous holder (ours) may have died
      // between its claim and the verdict. Denied claims were answered by our own table.
      if (result.status !== "claimed" || !claimOptions?.envelope || now() >= untilMs) return result;
      return settle(store, result.lease, claimOptions.envelope);
    },
    complete: (lease, result) => store.complete(lease, result),
    release: (lease) => store.release(lease),
    ...(store.recordRoute
      ? { recordRoute: (lease: Lease, route: string) => store.recordRoute!(lease, route) }
      : {}),
    renew: (lease, leaseMs) => store.renew(lease, leaseMs),
    flush: () => store.flush(),
  });
}
