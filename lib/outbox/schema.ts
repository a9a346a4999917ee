/**
 * The app table's outbox and inbox shape: the one source of truth for the library and for the CDK
 * constructs (table, GSI, TTL, stream, event-source filter, IAM grants, environment variables).
 *
 * Where things live (all in the *app* table, so one TransactWriteItems covers them):
 *
 * | item          | pk                                   | sk                     |
 * |---------------|--------------------------------------|------------------------|
 * | business item | whatever the service uses            | whatever the service uses |
 * | inbox marker  | `INBOX#<scope>#<dedup key>`          | `INBOX`                |
 * | outbox event  | `OUTBOX#<aggregateType>#<aggregateId>` | `EVENT#<eventId>` (UUIDv7, time-ordered) |
 * | aggregate head | `OUTBOX#<aggregateType>#<aggregateId>` | `HEAD` (the last sequence number written) |
 *
 * All events of one aggregate share a partition key, but every event is an item of its own, and
 * DynamoDB Streams keeps the order of the records of one *item* only: the records of one
 * aggregate's events may reach the relay out of order, within a batch or across batches. So order
 * never rests on the stream: each event carries its place in its aggregate (`seq`, `prevSk`), the
 * relay and the sweeper publish an aggregate's events in that order, and an event leaves only once
 * its predecessor is published (lib/outbox/aggregateOrder.ts). The relay's mapping reads a shard
 * one batch at a time (ParallelizationFactor 1), so one invocation at a time sees a shard.
 */
export const OUTBOX_ATTR = {
  /** Partition key (S). */
  pk: "pk",
  /** Sort key (S). */
  sk: "sk",
  /** Discriminator: `OUTBOX` on outbox events, `INBOX` on inbox markers. */
  itemType: "itemType",
  /**
   * Sparse GSI partition key (S): present only while the event is unpublished. Its value is a
   * shard `"0"`…`"<pendingShards-1>"` chosen from the aggregate, so the GSI has no single hot key
   * and one aggregate's pending events sit in one shard, ordered by `pendingSince`.
   */
  pending: "pending",
  /** GSI sort key (N): epoch ms when the event became pending (its creation time). */
  pendingSince: "pendingSince",
  /**
   * TTL (N): epoch seconds. Never on a pending event: a destination down for longer than the
   * retention must not let TTL delete events nobody published. Set when the event is published.
   */
  expiresAt: "expiresAt",
  /** How long (N, seconds) an event stays once published: its TTL starts then. */
  retentionSeconds: "retentionSeconds",
  /** The UUIDv7 event id (S); also sent as the `message-id` header, so consumers dedup by it. */
  eventId: "eventId",
  aggregateType: "aggregateType",
  aggregateId: "aggregateId",
  eventType: "eventType",
  /** The payload as published (S): JSON text unless `contentType` says otherwise. */
  payload: "payload",
  contentType: "contentType",
  /** String headers (M of S): `traceparent`, `schema-version`, and the user's own. */
  headers: "headers",
  schemaVersion: "schemaVersion",
  /** Epoch ms (N). */
  createdAt: "createdAt",
  /** Where the relay publishes it (S): `kafka:<topic>`, `sqs:<queue url>`, or a route name. */
  destination: "destination",
  /** The inbox key of the message whose handling produced this event (S), for tracing. */
  causationId: "causationId",
  /** Epoch ms (N), set when the relay or sweeper cleared `pending`. */
  publishedAt: "publishedAt",
  /** Who cleared `pending`: `relay` or `sweeper`. */
  publishedBy: "publishedBy",
  /** Epoch ms (N), set when a permanently failing event was parked instead of published. */
  parkedAt: "parkedAt",
  /** Epoch ms (N), set by `discardParked`: a parked event given up for good (no longer holds its aggregate back). */
  discardedAt: "discardedAt",
  /** `Type: message` of the error that parked it (S). */
  lastError: "lastError",
  /**
   * The event's place in its aggregate (N): 1, 2, 3, … with no gaps, written by the unit of work
   * in the same transaction as the aggregate's head (`aggregateSequence`). Absent on events written
   * without it (then order rests on the sort key and a read per aggregate per batch).
   */
  seq: "seq",
  /** The sort key (S) of the aggregate's previous event (`seq - 1`); absent on the first. */
  prevSk: "prevSk",
  /** On the head: the sort key (S) of the aggregate's last event written. */
  lastSk: "lastSk",
  // Inbox marker attributes
  /** Epoch ms (N) when the inbox marker was written. */
  receivedAt: "receivedAt",
  /** sha256 of the raw message (S), only when key-reuse detection is on. */
  payloadHash: "payloadHash",
  /** Where the message came from (S): queue ARN, topic-partition-offset or stream sequence number. */
  messageSource: "messageSource",
} as const;

/** The app table's partition key. */
export const OUTBOX_PARTITION_KEY = OUTBOX_ATTR.pk;
/** The app table's sort key. */
export const OUTBOX_SORT_KEY = OUTBOX_ATTR.sk;
/** Key schema of the app table: pk (S, HASH) + sk (S, RANGE). */
export const APP_TABLE_KEYS = {
  partitionKey: { name: OUTBOX_ATTR.pk, type: "S" },
  sortKey: { name: OUTBOX_ATTR.sk, type: "S" },
} as const;

/** Sparse GSI: partition `pending` (S), sort `pendingSince` (N), projection ALL (the sweeper republishes from it). */
export const OUTBOX_PENDING_INDEX = "pending-index";
/** The keys of the sparse pending-events GSI. */
export const OUTBOX_PENDING_INDEX_KEYS = {
  partitionKey: { name: OUTBOX_ATTR.pending, type: "S" },
  sortKey: { name: OUTBOX_ATTR.pendingSince, type: "N" },
  projection: "ALL",
} as const;
/** The app table's TTL attribute (epoch seconds; never on a pending event). */
export const OUTBOX_TTL_ATTRIBUTE = OUTBOX_ATTR.expiresAt;
/** The relay reads the new image of each INSERT. NEW_AND_OLD_IMAGES works too. */
export const OUTBOX_STREAM_VIEW_TYPE = "NEW_IMAGE";

/** Partition-key prefix of outbox events: `OUTBOX#<aggregateType>#<aggregateId>`. */
export const OUTBOX_PK_PREFIX = "OUTBOX#";
/** Sort-key prefix of outbox events: `EVENT#<eventId>`. */
export const OUTBOX_SK_PREFIX = "EVENT#";
/**
 * Sort key of an aggregate's head item (beside its events, `OUTBOX#<type>#<id>`): `seq` and
 * `lastSk` of the last event written. It has no `pending`, so neither the stream filter nor the
 * pending index sees it, and no TTL: it must outlive every pending event of its aggregate.
 */
export const OUTBOX_HEAD_SK = "HEAD";
/** Partition-key prefix of inbox markers: `INBOX#<scope>#<dedup key>`. */
export const INBOX_PK_PREFIX = "INBOX#";
/** Sort key of every inbox marker. */
export const INBOX_SK = "INBOX";
/** `itemType` of an outbox event. */
export const OUTBOX_ITEM_TYPE = "OUTBOX";
/** `itemType` of an inbox marker. */
export const INBOX_ITEM_TYPE = "INBOX";

/** The partition key of an aggregate's outbox events. */
export function outboxPk(aggregateType: string, aggregateId: string): string {
  return `${OUTBOX_PK_PREFIX}${aggregateType}#${aggregateId}`;
}
/** The sort key of an outbox event. */
export function outboxSk(eventId: string): string {
  return `${OUTBOX_SK_PREFIX}${eventId}`;
}
/** The partition key of an inbox marker. */
export function inboxPk(scope: string, key: string): string {
  return `${INBOX_PK_PREFIX}${scope}#${key}`;
}

/**
 * The Lambda event-source filter for the relay (FilterCriteria pattern): INSERTs of outbox events
 * that are still pending. MODIFYs (the relay clearing `pending`), REMOVEs (TTL) and every other item
 * type never invoke the relay.
 */
export const OUTBOX_STREAM_FILTER_PATTERN = {
  eventName: ["INSERT"],
  dynamodb: {
    Keys: { pk: { S: [{ prefix: OUTBOX_PK_PREFIX }] } },
    NewImage: { pending: { S: [{ exists: true }] } },
  },
} as const;

/** IAM actions on the app table (and `<table>/index/*`), for least-privilege grants. */
export const OUTBOX_IAM_ACTIONS = {
  /**
   * The unit of work: TransactWriteItems is authorised per contained action, so grant the actions
   * the handler stages (Put for the marker and events; Update/Delete/ConditionCheck for business
   * writes) plus the transaction itself.
   */
  unitOfWork: [
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:GetItem",
  ],
  /** The relay reads an aggregate's previous event where order is in doubt (BatchGetItem by its key; Query for events without a sequence number), clears `pending` with BatchWriteItem (puts) and parks with UpdateItem; plus the stream read actions that the event source mapping needs (DescribeStream, GetRecords, GetShardIterator, ListStreams). */
  relay: [
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:BatchWriteItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
  ],
  relayStream: [
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
  ],
  /** The sweeper queries the pending index (on `<table>/index/pending-index`) and reads the table (each aggregate's previous event: BatchGetItem, or Query without a sequence number), and clears markers with fenced PartiQL UPDATEs (BatchExecuteStatement is authorised per statement). */
  sweeper: [
    "dynamodb:Query",
    "dynamodb:BatchGetItem",
    "dynamodb:PartiQLUpdate",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
  ],
} as const;

/** The outbox's defaults: retention, pending shards, sweeper age. */
export const OUTBOX_DEFAULTS = {
  /** Outbox events are kept 7 days after creation (longer than the 24 h stream window). */
  eventRetentionSeconds: 7 * 24 * 3600,
  /** Inbox markers: 30 days, as `DEDUP_DEFAULTS.windowSeconds` (see there why). */
  inboxWindowSeconds: 30 * 24 * 3600,
  /** Shards of the sparse pending GSI. Writer and sweeper must agree. */
  pendingShards: 8,
  /** The sweeper republishes events pending for longer than this. */
  sweeperMinAgeMs: 10 * 60_000,
  schemaVersion: "1",
} as const;

/**
 * The app table's shape, for tools that read or create it (the local runtime, a dashboard): its
 * keys, the sparse pending-events index, the stream view and filter the relay needs, the TTL
 * attribute (epoch seconds), the attributes and item types of inbox markers and outbox events, and
 * the defaults. `OutboxTable` and the library read the same names.
 */
export const OUTBOX_TABLE = {
  keys: APP_TABLE_KEYS,
  pendingIndex: { name: OUTBOX_PENDING_INDEX, ...OUTBOX_PENDING_INDEX_KEYS },
  streamViewType: OUTBOX_STREAM_VIEW_TYPE,
  streamFilterPattern: OUTBOX_STREAM_FILTER_PATTERN,
  ttlAttribute: OUTBOX_TTL_ATTRIBUTE,
  attributes: OUTBOX_ATTR,
  itemTypes: { outbox: OUTBOX_ITEM_TYPE, inbox: INBOX_ITEM_TYPE },
  headSk: OUTBOX_HEAD_SK,
  defaults: OUTBOX_DEFAULTS,
} as const;
