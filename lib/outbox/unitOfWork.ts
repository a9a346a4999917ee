import { createHash } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Envelope } from "../core/envelope.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { type AggregateHeads, createAggregateHeads } from "./aggregateHeads.ts";
import { commitUnit } from "./commitUnit.ts";
import { TransactionConflictError, TransactionThrottledError } from "./errors.ts";
import { TRANSACTION_LIMITS } from "./itemSize.ts";
import { OUTBOX_ATTR as A, OUTBOX_DEFAULTS } from "./schema.ts";
import type { StagingConfig } from "./stagedWrites.ts";
import { stageUnit, type UnitOfWorkHandler } from "./stageUnit.ts";

export type {
  StagedConditionCheck,
  StagedDelete,
  StagedPut,
  StagedUpdate,
  StageOptions,
} from "./stagedWrites.ts";
export type { UnitOfWork, UnitOfWorkHandler } from "./stageUnit.ts";

/**
 * The transactional inbox + outbox unit of work.
 *
 * A handler stages its DynamoDB writes and its outgoing events; `run` commits them in ONE
 * TransactWriteItems together with the message's inbox marker, written first:
 *
 *   [0]      Put INBOX#<scope>#<id>   if absent (or past its TTL)   ← the dedup mark
 *   [1..k]   the handler's Put / Update / Delete / ConditionCheck
 *   [k+1..]  Put OUTBOX#<aggregate>/EVENT#<uuidv7>  if absent        ← the events, pending, numbered
 *   [..n]    Update OUTBOX#<aggregate>/HEAD  if as last seen         ← one per aggregate (aggregateHeads.ts)
 *
 * - A redelivered message fails the marker's condition, so nothing of it is applied again:
 *   exactly-once effects inside DynamoDB with no lease, no second write to "complete", and no
 *   in-progress state that a crash could strand. A crash anywhere before the commit leaves nothing.
 * - Two concurrent deliveries of one message serialise on the marker: one commits, the other is
 *   cancelled (TransactionConflict → transient, retried → then a duplicate).
 * - The events leave later, from the relay on the table's stream (at least once, in order per aggregate).
 *
 * Cancellation reasons (aligned with the actions, ReturnValuesOnConditionCheckFailure = ALL_OLD):
 *   marker ConditionalCheckFailed → duplicate (skip); a business ConditionalCheckFailed → the
 *   write's `onConditionFailed` error, else BusinessConditionFailedError (permanent);
 *   TransactionConflict → TransactionConflictError, throttling → TransactionThrottledError
 *   (both transient); ValidationError / ItemCollectionSizeLimitExceeded → TransactionRejectedError.
 */

/** What a unit of work gives: committed (with its events), or a duplicate whose marker was already there. */
export type UnitOfWorkResult<T> =
  | {
      readonly status: "committed";
      readonly value: T;
      readonly eventIds: ReadonlyArray<string>;
      readonly actions: number;
      readonly estimatedBytes: number;
    }
  /** The inbox marker was already there: this message was processed before; nothing was applied. */
  | { readonly status: "duplicate"; readonly firstReceivedAt: number | undefined };

/** Options of `createInboxOutbox`. */
export interface UnitOfWorkOptions {
  /** The app table: business items, inbox markers and outbox events. */
  readonly tableName: string;
  /** Inbox scope: the consumer. Two consumers of one message must both process it. */
  readonly scope: string;
  /** @default a new DynamoDBClient from the environment */
  readonly client?: DynamoDBClient;
  /** Where the inbox markers live. @default tableName (so one transaction covers them) */
  readonly inboxTableName?: string;
  /** How long a message id is remembered. Must exceed the longest retry path. @default OUTBOX_DEFAULTS.inboxWindowSeconds (30 days) */
  readonly inboxWindowSeconds?: number;
  /** How long outbox events are kept (TTL). Keep it above the sweeper's reach. @default 7 days */
  readonly eventRetentionSeconds?: number;
  /** Shards of the sparse pending GSI; the sweeper must use the same number. @default 8 */
  readonly pendingShards?: number;
  /**
   * Number each aggregate's events 1, 2, 3, … in the transaction, with a head item per aggregate
   * (one more action: 2 write units). The relay then reads nothing for an event whose predecessor
   * it published itself, and reads the predecessor by its key where order is in doubt (a gap, a cold
   * container). `false`: no head; the relay reads each aggregate's newest older event once per batch
   * (a Query), as before. Writer and relay need no other agreement. @default true
   */
  readonly aggregateSequence?: boolean;
  /** Destination of events that do not name one. */
  readonly defaultDestination?: string;
  /**
   * Store a sha256 of the raw message on the marker, and turn a duplicate whose hash differs into
   * KeyReuseError (two different messages collided on one id). Off by default: producers that put
   * a timestamp in resent bodies would trip it.
   */
  readonly detectKeyReuse?: boolean;
  /** The primary-key attribute names per table, to catch two writes to one item before sending. @default { [tableName]: ["pk", "sk"] } */
  readonly keyAttributes?: Readonly<Record<string, ReadonlyArray<string>>>;
  /** Lower the transaction limits (tests, or to leave room). @default TRANSACTION_LIMITS */
  readonly limits?: Partial<typeof TRANSACTION_LIMITS>;
  /** Where duplicates and commits are counted (EMF metrics). @default - none: nothing is emitted */
  readonly telemetry?: Telemetry;
  /** Injectable clock for tests. */
  readonly now?: () => number;
}

/** The transactional inbox and outbox of one app table: `begin` a unit of work per message. */
export interface InboxOutbox {
  /** The app table the units of work write. */
  readonly tableName: string;
  /** The inbox scope (the consumer) its markers are written under. */
  readonly scope: string;
  /**
   * Runs `handler` for one message, then commits what it staged plus the inbox marker in one
   * transaction. Throws the handler's own errors (nothing is written) and the typed errors above.
   */
  run<TBody, T>(
    envelope: Envelope<TBody>,
    handler: UnitOfWorkHandler<TBody, T>,
  ): Promise<UnitOfWorkResult<T>>;
}

/**
 * Creates the inbox and outbox of an app table. The stages are modules of their own:
 * stagedWrites.ts (the actions and their sizes), stageUnit.ts (running the handler),
 * commitUnit.ts (preflight and the transaction, sent again while only heads moved) and
 * transactionFailure.ts (what a cancellation means).
 */
export function createInboxOutbox(options: UnitOfWorkOptions): InboxOutbox {
  const client = options.client ?? new DynamoDBClient({});
  const { tableName, scope } = options;
  const inboxTable = options.inboxTableName ?? tableName;
  const config: StagingConfig = {
    tableName,
    inboxTable,
    scope,
    inboxWindowSeconds: options.inboxWindowSeconds ?? OUTBOX_DEFAULTS.inboxWindowSeconds,
    retentionSeconds: options.eventRetentionSeconds ?? OUTBOX_DEFAULTS.eventRetentionSeconds,
    pendingShards: options.pendingShards ?? OUTBOX_DEFAULTS.pendingShards,
    keyAttributes: { [tableName]: [A.pk, A.sk], [inboxTable]: [A.pk, A.sk], ...options.keyAttributes },
    defaultDestination: options.defaultDestination,
  };
  const limits = { ...TRANSACTION_LIMITS, ...options.limits };
  const now = options.now ?? Date.now;
  const telemetry = options.telemetry;
  // The heads this container wrote or learned: a guess shared by its units of work, which each
  // transaction checks (aggregateHeads.ts).
  const heads: AggregateHeads | undefined =
    options.aggregateSequence === false ? undefined : createAggregateHeads();
  const commitDeps = { client, config, heads, limits };

  return {
    tableName,
    scope,
    async run(envelope, handler) {
      const t = now();
      const payloadHash = options.detectKeyReuse
        ? createHash("sha256").update(envelope.raw).digest("hex")
        : undefined;
      const unit = await stageUnit(config, envelope, handler, t, payloadHash);
      const outcome = await commitUnit(commitDeps, unit, payloadHash);
      if (outcome.status === "committed") {
        telemetry?.count(METRIC.unitOfWorkCommitted);
        const eventIds = unit.events.map((e) => e.eventId);
        return {
          status: "committed",
          value: unit.value,
          eventIds,
          actions: outcome.actions,
          estimatedBytes: outcome.estimatedBytes,
        };
      }
      if (outcome.status === "duplicate") {
        telemetry?.count(METRIC.duplicates);
        return outcome;
      }
      if (
        outcome.error instanceof TransactionConflictError ||
        outcome.error instanceof TransactionThrottledError
      ) {
        telemetry?.count(METRIC.unitOfWorkConflicts);
      }
      throw outcome.error;
    },
  };
}
