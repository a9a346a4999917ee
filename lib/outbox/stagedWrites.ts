/**
 * The actions of one unit of work's transaction, each with its size and the item it targets: the
 * inbox marker, the handler's business writes (as the DocumentClient shapes the handler passes),
 * the outbox events and one head update per aggregate (aggregateHeads.ts). unitOfWork.ts says the
 * order they go in and why.
 */
import type { AttributeValue, TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { marshall, type NativeAttributeValue } from "@aws-sdk/util-dynamodb";
import type { Envelope } from "../core/envelope.ts";
import type { AggregateHeads, HeadWrite } from "./aggregateHeads.ts";
import { UnitOfWorkInvalidError } from "./errors.ts";
import { itemSize } from "./itemSize.ts";
import { type AggregatePosition, type OutboxEvent, toOutboxItem } from "./outboxEvent.ts";
import { OUTBOX_ATTR as A, INBOX_ITEM_TYPE, INBOX_SK, inboxPk } from "./schema.ts";

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

/** One action of the transaction, with what preflight and the failure interpretation need of it. */
export interface Staged {
  readonly action: TransactWriteItem;
  readonly label: string;
  readonly onConditionFailed: StageOptions["onConditionFailed"];
  readonly kind: "marker" | "business" | "event" | "head";
  /** What the action adds to the transaction's size, in bytes (DynamoDB's item-size rules). */
  readonly bytes: number;
  /** The item it targets (`identity`), to catch two writes to one item; undefined for a table of unknown key schema. */
  readonly itemKey: string | undefined;
  /** A head's aggregate partition key. */
  readonly pk?: string;
}

/**
 * What a unit of work's writes are built from, fixed when the inbox and outbox is created
 * (`createInboxOutbox` resolves the defaults).
 */
export interface StagingConfig {
  /** The app table: business writes that name no table, the events, the heads. */
  readonly tableName: string;
  /** Where the inbox markers live. */
  readonly inboxTable: string;
  /** The inbox scope: the consumer. */
  readonly scope: string;
  /** How long a message id is remembered, in seconds. */
  readonly inboxWindowSeconds: number;
  /** How long outbox events are kept (TTL), in seconds. */
  readonly retentionSeconds: number;
  /** Shards of the sparse pending GSI. */
  readonly pendingShards: number;
  /** The primary-key attribute names per table, to catch two writes to one item. */
  readonly keyAttributes: Readonly<Record<string, ReadonlyArray<string>>>;
  /** Destination of events that do not name one. */
  readonly defaultDestination: string | undefined;
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
export interface StagedWrites {
  put: StagedPut;
  update: StagedUpdate;
  delete: StagedDelete;
  conditionCheck: StagedConditionCheck;
}
/** The kinds of business write a handler stages. */
export type StagedKind = keyof StagedWrites;

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
export const STAGE_BUILDERS: {
  readonly [K in StagedKind]: (write: StagedWrites[K], table: string) => BuiltAction;
} = {
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

/** Canonical identity of the item a write targets, when we know the table's key schema. */
export function identity(
  keyAttributes: StagingConfig["keyAttributes"],
  table: string,
  itemOrKey: Record<string, AttributeValue>,
): string | undefined {
  const names = keyAttributes[table];
  if (!names) return undefined;
  const parts = names.map((name) => JSON.stringify(itemOrKey[name] ?? null));
  return `${table}\u0000${parts.join("\u0000")}`;
}

function describeSource(envelope: Envelope): string {
  const s = envelope.source;
  switch (s.kind) {
    case "sqs":
      return `sqs:${s.queueArn}:${s.messageId}`;
    case "kafka":
      return `kafka:${s.topic}:${s.partition}:${s.offset}`;
    case "kinesis":
      return `kinesis:${s.streamArn}:${s.shardId ?? ""}:${s.sequenceNumber}`;
    case "dynamodb-stream":
      return `ddb:${s.streamArn}:${s.sequenceNumber}`;
  }
}

/** [0] the inbox marker. Writable when absent or past its TTL (TTL deletion lags by up to days). */
export function markerWrite(
  config: StagingConfig,
  envelope: Envelope,
  t: number,
  payloadHash: string | undefined,
): Staged {
  const marker: Record<string, AttributeValue> = {
    [A.pk]: { S: inboxPk(config.scope, envelope.id) },
    [A.sk]: { S: INBOX_SK },
    [A.itemType]: { S: INBOX_ITEM_TYPE },
    [A.receivedAt]: { N: String(t) },
    [A.expiresAt]: { N: String(Math.floor(t / 1000) + config.inboxWindowSeconds) },
    [A.messageSource]: { S: describeSource(envelope) },
  };
  if (payloadHash) marker[A.payloadHash] = { S: payloadHash };
  return {
    action: {
      Put: {
        TableName: config.inboxTable,
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
    itemKey: identity(config.keyAttributes, config.inboxTable, marker),
  };
}

/** An outbox event's put: an event id is written once. */
function eventWrite(
  config: StagingConfig,
  event: OutboxEvent,
  position: AggregatePosition | undefined,
): Staged {
  const item = toOutboxItem(event, {
    retentionSeconds: config.retentionSeconds,
    pendingShards: config.pendingShards,
    ...(position ? { position } : {}),
  });
  return {
    action: {
      Put: {
        TableName: config.tableName,
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
    itemKey: identity(config.keyAttributes, config.tableName, item),
  };
}

/**
 * The events' puts (numbered when `heads` is given: `aggregateSequence`) and one head update per
 * aggregate. Planned again on each attempt of a commit, from the heads as last learned.
 */
export function eventActions(
  config: StagingConfig,
  heads: AggregateHeads | undefined,
  events: ReadonlyArray<OutboxEvent>,
): { staged: Staged[]; headWrites: HeadWrite[] } {
  if (!heads) return { staged: events.map((e) => eventWrite(config, e, undefined)), headWrites: [] };
  const { positions, heads: headWrites } = heads.plan(events, config.tableName);
  const headStaged = headWrites.map(
    (h): Staged => ({
      action: h.action,
      label: `head:${h.pk}`,
      onConditionFailed: undefined,
      kind: "head",
      bytes: itemSize(h.action.Update!.Key!) + valuesBytes(h.action.Update!.ExpressionAttributeValues),
      itemKey: identity(config.keyAttributes, config.tableName, h.action.Update!.Key!),
      pk: h.pk,
    }),
  );
  return {
    staged: [...events.map((e, i) => eventWrite(config, e, positions[i])), ...headStaged],
    headWrites,
  };
}
