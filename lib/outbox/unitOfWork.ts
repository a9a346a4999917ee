import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type AttributeValue,
  type CancellationReason,
  DynamoDBClient,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from "@aws-sdk/client-dynamodb";
import { marshall, type NativeAttributeValue, unmarshall } from "@aws-sdk/util-dynamodb";
import type { Envelope } from "../core/envelope.ts";
import { KeyReuseError, PermanentError, TransientError } from "../core/errors.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { type AggregateHeads, createAggregateHeads, type HeadWrite } from "./aggregateHeads.ts";
import {
  BusinessConditionFailedError,
  TransactionConflictError,
  TransactionRejectedError,
  TransactionThrottledError,
  UnitOfWorkInvalidError,
  UnitOfWorkTooLargeError,
} from "./errors.ts";
import { itemSize, TRANSACTION_LIMITS } from "./itemSize.ts";
import {
  type AggregatePosition,
  type NewOutboxEvent,
  type OutboxEvent,
  resolveNewEvent,
  toOutboxItem,
} from "./outboxEvent.ts";
import { OUTBOX_ATTR as A, INBOX_ITEM_TYPE, INBOX_SK, inboxPk, OUTBOX_DEFAULTS } from "./schema.ts";

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

type Item = Record<string, NativeAttributeValue>;

interface ExpressionParts {
  readonly ConditionExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
  readonly ExpressionAttributeValues?: Item;
}

/** A put staged in a unit of work. */
export interface StagedPut extends ExpressionParts {
  /** @default the unit of work's table */
  readonly TableName?: string;
  readonly Item: Item;
}
/** An update staged in a unit of work. */
export interface StagedUpdate extends ExpressionParts {
  readonly TableName?: string;
  readonly Key: Item;
  readonly UpdateExpression: string;
}
/** A delete staged in a unit of work. */
export interface StagedDelete extends ExpressionParts {
  readonly TableName?: string;
  readonly Key: Item;
}
/** A condition check staged in a unit of work. */
export interface StagedConditionCheck extends ExpressionParts {
  readonly TableName?: string;
  readonly Key: Item;
  readonly ConditionExpression: string;
}

/** Options of one staged write. */
export interface StageOptions {
  /** A name for errors and logs. @default `put#1`, `update#2`, … */
  readonly label?: string;
  /**
   * Called when this write's condition fails, with the item as it was (or undefined if it did
   * not exist). Return the error to throw: usually the handler's own typed PermanentError.
   */
  readonly onConditionFailed?: (existing: Record<string, unknown> | undefined) => Error;
}

/** What the handler gets: stage writes and events; nothing touches DynamoDB until the handler returns. */
export interface UnitOfWork<TBody = unknown> {
  readonly envelope: Envelope<TBody>;
  put(put: StagedPut, options?: StageOptions): void;
  update(update: StagedUpdate, options?: StageOptions): void;
  delete(del: StagedDelete, options?: StageOptions): void;
  conditionCheck(check: StagedConditionCheck, options?: StageOptions): void;
  /** Stages an outbox event; returns its event id (UUIDv7). */
  publish(event: NewOutboxEvent): string;
  /** Actions staged so far, the marker included. */
  readonly actionCount: number;
}

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
  readonly telemetry?: Telemetry;
  /** Injectable clock for tests. */
  readonly now?: () => number;
}

export type UnitOfWorkHandler<TBody, T> = (uow: UnitOfWork<TBody>) => Promise<T> | T;

/** The transactional inbox and outbox of one app table: `begin` a unit of work per message. */
export interface InboxOutbox {
  readonly tableName: string;
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

interface Staged {
  readonly action: TransactWriteItem;
  readonly label: string;
  readonly onConditionFailed: StageOptions["onConditionFailed"];
  readonly kind: "marker" | "business" | "event" | "head";
  readonly bytes: number;
  readonly itemKey: string | undefined;
  /** A head's aggregate partition key. */
  readonly pk?: string;
}

const marshallOptions = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

function expressionParts(e: ExpressionParts): {
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
} {
  return {
    ...(e.ConditionExpression !== undefined ? { ConditionExpression: e.ConditionExpression } : {}),
    ...(e.ExpressionAttributeNames !== undefined
      ? { ExpressionAttributeNames: e.ExpressionAttributeNames }
      : {}),
    ...(e.ExpressionAttributeValues !== undefined
      ? { ExpressionAttributeValues: marshall(e.ExpressionAttributeValues, marshallOptions) }
      : {}),
  };
}

function valuesBytes(values: Record<string, AttributeValue> | undefined): number {
  return values ? itemSize(values) : 0;
}

/** The staged write of each kind, as the handler passes it. */
interface StagedWrites {
  put: StagedPut;
  update: StagedUpdate;
  delete: StagedDelete;
  conditionCheck: StagedConditionCheck;
}
type StagedKind = keyof StagedWrites;

interface BuiltAction {
  readonly action: TransactWriteItem;
  /** What the action adds to the transaction's size (the item, or the key and the values). */
  readonly bytes: number;
  /** The item or key, to catch two writes to one item. */
  readonly key: Record<string, AttributeValue>;
}

/**
 * One builder per kind of staged write: the DocumentClient shape → the TransactWriteItem, its
 * size, and the key it targets. Every action asks for the old item when its condition fails
 * (ReturnValuesOnConditionCheckFailure: ALL_OLD), so `onConditionFailed` can see it.
 */
const STAGE_BUILDERS: { readonly [K in StagedKind]: (write: StagedWrites[K], table: string) => BuiltAction } =
  {
    put(put, table) {
      const item = marshall(put.Item, marshallOptions);
      return {
        action: {
          Put: {
            TableName: table,
            Item: item,
            ...expressionParts(put),
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          },
        },
        bytes: itemSize(item),
        key: item,
      };
    },
    update(update, table) {
      const key = marshall(update.Key, marshallOptions);
      const parts = expressionParts(update);
      return {
        action: {
          Update: {
            TableName: table,
            Key: key,
            UpdateExpression: update.UpdateExpression,
            ...parts,
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          },
        },
        bytes: itemSize(key) + valuesBytes(parts.ExpressionAttributeValues),
        key,
      };
    },
    delete(del, table) {
      const key = marshall(del.Key, marshallOptions);
      const parts = expressionParts(del);
      return {
        action: {
          Delete: { TableName: table, Key: key, ...parts, ReturnValuesOnConditionCheckFailure: "ALL_OLD" },
        },
        bytes: itemSize(key) + valuesBytes(parts.ExpressionAttributeValues),
        key,
      };
    },
    conditionCheck(check, table) {
      const key = marshall(check.Key, marshallOptions);
      const parts = expressionParts(check);
      return {
        action: {
          ConditionCheck: {
            TableName: table,
            Key: key,
            ConditionExpression: check.ConditionExpression,
            ...parts,
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          },
        },
        bytes: itemSize(key) + valuesBytes(parts.ExpressionAttributeValues),
        key,
      };
    },
  };

/**
 * Attempts of one unit of work when only aggregate heads moved under it (a stale guess, or other
 * writers of the aggregate committing first: with k of them at once, the last needs k attempts).
 * After that, a transient TransactionConflictError: the message is retried.
 */
const HEAD_ATTEMPTS = 10;

const THROTTLING = new Set(["ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"]);
const REJECTED = new Set(["ValidationError", "ItemCollectionSizeLimitExceeded"]);

/** Creates the inbox and outbox of an app table. */
export function createInboxOutbox(options: UnitOfWorkOptions): InboxOutbox {
  const client = options.client ?? new DynamoDBClient({});
  const { tableName, scope } = options;
  const inboxTable = options.inboxTableName ?? tableName;
  const inboxWindowSeconds = options.inboxWindowSeconds ?? OUTBOX_DEFAULTS.inboxWindowSeconds;
  const retentionSeconds = options.eventRetentionSeconds ?? OUTBOX_DEFAULTS.eventRetentionSeconds;
  const pendingShards = options.pendingShards ?? OUTBOX_DEFAULTS.pendingShards;
  const limits = { ...TRANSACTION_LIMITS, ...options.limits };
  const keyAttributes: Record<string, ReadonlyArray<string>> = {
    [tableName]: [A.pk, A.sk],
    [inboxTable]: [A.pk, A.sk],
    ...options.keyAttributes,
  };
  const now = options.now ?? Date.now;
  const telemetry = options.telemetry;

  /** Canonical identity of the item a write targets, when we know the table's key schema. */
  const identity = (table: string, itemOrKey: Record<string, AttributeValue>): string | undefined => {
    const names = keyAttributes[table];
    if (!names) return undefined;
    const parts = names.map((name) => JSON.stringify(itemOrKey[name] ?? null));
    return `${table}\u0000${parts.join("\u0000")}`;
  };

  /** [0] the inbox marker. Writable when absent or past its TTL (TTL deletion lags by up to days). */
  const markerWrite = (envelope: Envelope, t: number, payloadHash: string | undefined): Staged => {
    const marker: Record<string, AttributeValue> = {
      [A.pk]: { S: inboxPk(scope, envelope.id) },
      [A.sk]: { S: INBOX_SK },
      [A.itemType]: { S: INBOX_ITEM_TYPE },
      [A.receivedAt]: { N: String(t) },
      [A.expiresAt]: { N: String(Math.floor(t / 1000) + inboxWindowSeconds) },
      [A.messageSource]: { S: describeSource(envelope) },
    };
    if (payloadHash) marker[A.payloadHash] = { S: payloadHash };
    return {
      action: {
        Put: {
          TableName: inboxTable,
          Item: marker,
          ConditionExpression: "attribute_not_exists(#pk) OR #exp < :nowSec",
          ExpressionAttributeNames: { "#pk": A.pk, "#exp": A.expiresAt },
          ExpressionAttributeValues: { ":nowSec": { N: String(Math.floor(t / 1000)) } },
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        },
      },
      label: "inbox-marker",
      onConditionFailed: undefined,
      kind: "marker",
      bytes: itemSize(marker),
      itemKey: identity(inboxTable, marker),
    };
  };

  /** An outbox event's put: an event id is written once. */
  const eventWrite = (event: OutboxEvent, position: AggregatePosition | undefined): Staged => {
    const item = toOutboxItem(event, { retentionSeconds, pendingShards, ...(position ? { position } : {}) });
    return {
      action: {
        Put: {
          TableName: tableName,
          Item: item,
          // An event id is written once: a reused explicit eventId must not overwrite a published event.
          ConditionExpression: "attribute_not_exists(#pk)",
          ExpressionAttributeNames: { "#pk": A.pk },
        },
      },
      label: `event:${event.eventType}`,
      onConditionFailed: () =>
        new UnitOfWorkInvalidError(
          `outbox event id ${event.eventId} already exists; event ids are written once`,
        ),
      kind: "event",
      bytes: itemSize(item),
      itemKey: identity(tableName, item),
    };
  };

  const heads: AggregateHeads | undefined =
    options.aggregateSequence === false ? undefined : createAggregateHeads();

  /** The events' puts (numbered when `aggregateSequence`) and one head update per aggregate. */
  const eventActions = (
    events: ReadonlyArray<OutboxEvent>,
  ): { staged: Staged[]; headWrites: HeadWrite[] } => {
    if (!heads) return { staged: events.map((e) => eventWrite(e, undefined)), headWrites: [] };
    const { positions, heads: headWrites } = heads.plan(events, tableName);
    const headStaged = headWrites.map(
      (h): Staged => ({
        action: h.action,
        label: `head:${h.pk}`,
        onConditionFailed: undefined,
        kind: "head",
        bytes: itemSize(h.action.Update!.Key!) + valuesBytes(h.action.Update!.ExpressionAttributeValues),
        itemKey: identity(tableName, h.action.Update!.Key!),
        pk: h.pk,
      }),
    );
    return { staged: [...events.map((e, i) => eventWrite(e, positions[i])), ...headStaged], headWrites };
  };

  /**
   * Commits: marker + business writes + events (+ heads). When only aggregate heads moved under it
   * (this container's guess was stale, or another writer of the aggregate committed first), the
   * heads are learned from the cancellation and the transaction is sent again, renumbered.
   */
  const commit = async (
    unit: { envelope: Envelope; written: ReadonlyArray<Staged>; events: ReadonlyArray<OutboxEvent> },
    payloadHash: string | undefined,
  ): Promise<{ status: "committed"; actions: number; estimatedBytes: number } | Interpreted> => {
    for (let attempt = 1; ; attempt++) {
      const { staged: eventStaged, headWrites } = eventActions(unit.events);
      const staged = [...unit.written, ...eventStaged];
      const estimatedBytes = preflight(staged, unit.events.length, headWrites.length, limits);
      try {
        await client.send(new TransactWriteItemsCommand({ TransactItems: staged.map((s) => s.action) }));
        heads?.committed(headWrites);
        return { status: "committed", actions: staged.length, estimatedBytes };
      } catch (error) {
        const outcome = interpretFailure(error, staged, payloadHash, scope, unit.envelope.id);
        if (outcome.status !== "head-moved") return outcome;
        for (const h of outcome.heads) if (h.learned) heads?.learned(h.pk, h.item);
        if (attempt >= HEAD_ATTEMPTS) {
          return {
            status: "error",
            error: new TransactionConflictError(
              `the heads of ${outcome.heads.map((h) => h.pk).join(", ")} kept moving (${attempt} attempts)`,
              { cause: error },
            ),
          };
        }
        // A conflict, or a head that keeps moving: back off a little (jittered) before the next try.
        if (attempt > 1 || outcome.heads.some((h) => !h.learned)) await sleep(Math.random() * 10 * attempt);
      }
    }
  };

  return {
    tableName,
    scope,
    async run(envelope, handler) {
      const t = now();
      const payloadHash = options.detectKeyReuse
        ? createHash("sha256").update(envelope.raw).digest("hex")
        : undefined;
      const unit = await stageUnit(envelope, handler, t, payloadHash);
      const outcome = await commit(unit, payloadHash);
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
      if (outcome.status === "error") {
        if (
          outcome.error instanceof TransactionConflictError ||
          outcome.error instanceof TransactionThrottledError
        ) {
          telemetry?.count(METRIC.unitOfWorkConflicts);
        }
        throw outcome.error;
      }
      throw new Error("unreachable: head-moved is handled in commit");
    },
  };

  /** Runs the handler against a fresh unit of work; what it staged, sealed. */
  async function stageUnit<TBody, T>(
    envelope: Envelope<TBody>,
    handler: UnitOfWorkHandler<TBody, T>,
    t: number,
    payloadHash: string | undefined,
  ): Promise<{ envelope: Envelope<TBody>; written: Staged[]; events: OutboxEvent[]; value: T }> {
    const written: Staged[] = [markerWrite(envelope, t, payloadHash)];
    const events: OutboxEvent[] = [];
    let counter = 0;
    let sealed = false;
    const open = (what: string) => {
      if (sealed)
        throw new UnitOfWorkInvalidError(
          `the unit of work was already committed; ${what} inside the handler`,
        );
    };
    const stage = <K extends StagedKind>(
      kind: K,
      write: StagedWrites[K],
      stageOptions: StageOptions | undefined,
    ) => {
      open("stage writes");
      counter++;
      const table = write.TableName ?? tableName;
      const { action, bytes, key } = STAGE_BUILDERS[kind](write, table);
      written.push({
        action,
        label: stageOptions?.label ?? `${kind}#${counter}`,
        onConditionFailed: stageOptions?.onConditionFailed,
        kind: "business",
        bytes,
        itemKey: identity(table, key),
      });
    };
    const uow: UnitOfWork<TBody> = {
      envelope,
      get actionCount() {
        return written.length + events.length;
      },
      put: (put, o) => stage("put", put, o),
      update: (update, o) => stage("update", update, o),
      delete: (del, o) => stage("delete", del, o),
      conditionCheck: (check, o) => stage("conditionCheck", check, o),
      publish(input) {
        open("publish");
        const event = resolveNewEvent(input, {
          now: t,
          defaultDestination: options.defaultDestination,
          incomingTraceparent: envelope.headers.traceparent,
          causationId: envelope.id,
          retentionSeconds,
          pendingShards,
        });
        events.push(event);
        return event.eventId;
      },
    };
    const value = await handler(uow);
    sealed = true;
    return { envelope, written, events, value };
  }
}

/** What DynamoDB would reject for size or shape; returns the transaction's estimated size. */
function preflight(
  staged: ReadonlyArray<Staged>,
  eventCount: number,
  headCount: number,
  limits: typeof TRANSACTION_LIMITS,
): number {
  const estimatedBytes = staged.reduce((sum, s) => sum + s.bytes, 0);
  if (staged.length > limits.maxActions) {
    const writes = staged.length - 1 - eventCount - headCount;
    throw new UnitOfWorkTooLargeError(
      `unit of work has ${staged.length} actions (inbox marker + ${writes} writes + ${eventCount} events${headCount ? ` + ${headCount} aggregate head${headCount > 1 ? "s" : ""}` : ""}); one transaction holds at most ${limits.maxActions}`,
      staged.length,
      estimatedBytes,
    );
  }
  if (estimatedBytes > limits.maxTransactionBytes) {
    throw new UnitOfWorkTooLargeError(
      `unit of work is about ${estimatedBytes} bytes; one transaction holds at most ${limits.maxTransactionBytes}`,
      staged.length,
      estimatedBytes,
    );
  }
  const seen = new Map<string, string>();
  for (const s of staged) {
    if (s.action.Put && s.bytes > limits.maxItemBytes) {
      throw new UnitOfWorkTooLargeError(
        `staged write '${s.label}' is about ${s.bytes} bytes; an item holds at most ${limits.maxItemBytes}`,
        staged.length,
        estimatedBytes,
      );
    }
    if (s.itemKey === undefined) continue;
    const other = seen.get(s.itemKey);
    if (other !== undefined) {
      throw new UnitOfWorkInvalidError(
        `staged writes '${other}' and '${s.label}' target the same item; a transaction may touch an item once`,
      );
    }
    seen.set(s.itemKey, s.label);
  }
  return estimatedBytes;
}

function describeSource(envelope: Envelope): string {
  const s = envelope.source;
  switch (s.kind) {
    case "sqs":
      return `sqs:${s.queueArn}:${s.messageId}`;
    case "kafka":
      return `kafka:${s.topic}:${s.partition}:${s.offset}`;
    case "dynamodb-stream":
      return `ddb:${s.streamArn}:${s.sequenceNumber}`;
  }
}

function unmarshallOld(
  item: Record<string, AttributeValue> | undefined,
): Record<string, unknown> | undefined {
  return item ? unmarshall(item) : undefined;
}

type Interpreted =
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

/** Maps a failed TransactWriteItems to duplicate / typed error. Exported for unit tests. */
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
