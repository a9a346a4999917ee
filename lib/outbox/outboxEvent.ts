import { createHash, randomBytes } from "node:crypto";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { v7 as uuidv7 } from "uuid";
import { MESSAGE_ID_HEADER } from "../core/envelope.ts";
import type { PermanentError } from "../core/errors.ts";
import { MalformedOutboxItemError, UnitOfWorkInvalidError } from "./errors.ts";
import {
  OUTBOX_ATTR as A,
  OUTBOX_DEFAULTS,
  OUTBOX_ITEM_TYPE,
  OUTBOX_PK_PREFIX,
  OUTBOX_SK_PREFIX,
  outboxPk,
  outboxSk,
} from "./schema.ts";

/**
 * An outbox event as stored in the app table and as the relay publishes it. Pure: building the
 * item, reading it back (strictly: a malformed item is a typed error), and the headers it carries.
 */
export interface OutboxEvent {
  /** UUIDv7: time-ordered, so the sort key keeps an aggregate's events in creation order. */
  readonly eventId: string;
  /** The kind of aggregate the event is about (`order`); part of the item's key. */
  readonly aggregateType: string;
  /** The aggregate's id: the Kafka key and FIFO group, and the unit of publishing order. */
  readonly aggregateId: string;
  /** What happened (`OrderPlaced`): the `event-type` header. */
  readonly eventType: string;
  /** Exactly what is published: JSON text unless `contentType` says otherwise. */
  readonly payload: string;
  /** The payload's media type: the `content-type` header. */
  readonly contentType: string;
  /** The payload's schema version: the `schema-version` header. */
  readonly schemaVersion: string;
  /** String headers, always including `traceparent` and `schema-version`. */
  readonly headers: Readonly<Record<string, string>>;
  /** Epoch ms. */
  readonly createdAt: number;
  /** `kafka:<topic>`, `sqs:<queue url>`, or a route name the relay resolves. */
  readonly destination: string;
  /** The inbox key of the message that caused it, if any. */
  readonly causationId: string | undefined;
}

/** What became of one event handed to the publisher (relay, sweeper, requeue). */
export type PublishOutcome =
  | { readonly status: "published" }
  /** Transient: it stays pending and is tried again. */
  | { readonly status: "failed"; readonly error: Error }
  /** It can never be published as it is: it is parked with its context. */
  | { readonly status: "rejected"; readonly error: PermanentError };

/** What a handler stages with `uow.publish(...)`. */
export interface NewOutboxEvent {
  /** The kind of aggregate the event is about (`order`); must not contain `#`. */
  readonly aggregateType: string;
  /**
   * The aggregate's id: events of one aggregate are published in the order they were staged, keyed
   * (Kafka) or grouped (SQS FIFO) by it.
   */
  readonly aggregateId: string;
  /** What happened (`OrderPlaced`), published as the `event-type` header. */
  readonly eventType: string;
  /** A string is published as is; anything else as JSON. */
  readonly payload: unknown;
  /**
   * Where to publish: `kafka:<topic>`, `sqs:<queue url>`, or a route name.
   * @default the unit of work's defaultDestination
   */
  readonly destination?: string;
  /**
   * The payload's media type (`content-type` header).
   * @default "application/json" (for a string payload: "application/json" if it parses as JSON, else
   * "text/plain")
   */
  readonly contentType?: string;
  /** The payload's schema version (`schema-version` header). @default "1" */
  readonly schemaVersion?: string;
  /** W3C trace context. @default the incoming message's `traceparent`, else a new one */
  readonly traceparent?: string;
  /** Extra string headers, published with the event. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The event's id: its dedup key downstream (`message-id`). @default a new UUIDv7 */
  readonly eventId?: string;
}

/** Header names the relay publishes (Kafka headers / SQS message attributes). */
export const OUTBOX_HEADERS = {
  /** The event id under the library's producer-id header, so every consumer dedups by it. */
  messageId: MESSAGE_ID_HEADER,
  eventType: "event-type",
  aggregateType: "aggregate-type",
  aggregateId: "aggregate-id",
  traceparent: "traceparent",
  schemaVersion: "schema-version",
  contentType: "content-type",
  createdAt: "created-at",
} as const;

/** A new event id: a UUIDv7, ordered by time. */
export function newEventId(): string {
  return uuidv7();
}

/** A new W3C `traceparent` (version 00, sampled). */
export function newTraceparent(): string {
  return `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`;
}

const TRACEPARENT = /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/;
export function isTraceparent(value: string | undefined): value is string {
  return value !== undefined && TRACEPARENT.test(value);
}

/** The pending-index shard of an aggregate: stable, so one aggregate's pending events share a shard. */
export function pendingShard(aggregateType: string, aggregateId: string, shards: number): string {
  if (shards <= 1) return "0";
  const h = createHash("sha1").update(`${aggregateType}#${aggregateId}`).digest();
  return String(h.readUInt32BE(0) % shards);
}

function looksLikeJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export interface BuildOptions {
  readonly now: number;
  readonly defaultDestination: string | undefined;
  readonly incomingTraceparent: string | undefined;
  readonly causationId: string | undefined;
  readonly retentionSeconds: number;
  readonly pendingShards: number;
  readonly eventId?: () => string;
}

/** Validates a staged event and resolves its defaults. Throws UnitOfWorkInvalidError. */
export function resolveNewEvent(input: NewOutboxEvent, options: BuildOptions): OutboxEvent {
  const req = (name: string, value: unknown): string => {
    if (typeof value !== "string" || value === "")
      throw new UnitOfWorkInvalidError(`outbox event: '${name}' must be a non-empty string`);
    return value;
  };
  const aggregateType = req("aggregateType", input.aggregateType);
  const aggregateId = req("aggregateId", input.aggregateId);
  if (aggregateType.includes("#"))
    throw new UnitOfWorkInvalidError("outbox event: 'aggregateType' must not contain '#'");
  const eventType = req("eventType", input.eventType);
  const destination = req("destination", input.destination ?? options.defaultDestination);
  let payload: string;
  let contentType = input.contentType;
  if (typeof input.payload === "string") {
    payload = input.payload;
    contentType ??= looksLikeJson(payload) ? "application/json" : "text/plain";
  } else {
    const json = JSON.stringify(input.payload);
    if (json === undefined)
      throw new UnitOfWorkInvalidError("outbox event: 'payload' is not serialisable to JSON");
    payload = json;
    contentType ??= "application/json";
  }
  const traceparent = isTraceparent(input.traceparent)
    ? input.traceparent
    : isTraceparent(options.incomingTraceparent)
      ? options.incomingTraceparent
      : newTraceparent();
  const schemaVersion = input.schemaVersion ?? OUTBOX_DEFAULTS.schemaVersion;
  for (const [k, v] of Object.entries(input.headers ?? {})) {
    if (typeof v !== "string")
      throw new UnitOfWorkInvalidError(`outbox event: header '${k}' must be a string`);
  }
  return {
    eventId: input.eventId ?? (options.eventId ?? newEventId)(),
    aggregateType,
    aggregateId,
    eventType,
    payload,
    contentType,
    schemaVersion,
    headers: {
      ...input.headers,
      [OUTBOX_HEADERS.traceparent]: traceparent,
      [OUTBOX_HEADERS.schemaVersion]: schemaVersion,
    },
    createdAt: options.now,
    destination,
    causationId: options.causationId,
  };
}

const s = (v: string): AttributeValue => ({ S: v });
const n = (v: number): AttributeValue => ({ N: String(v) });

/** An event's place in its aggregate: its sequence number and its predecessor's sort key. */
export interface AggregatePosition {
  /** 1, 2, 3, … with no gaps (the aggregate's head counts them in the same transaction). */
  readonly seq: number;
  /** The sort key of event `seq - 1`; absent on the aggregate's first numbered event. */
  readonly prevSk: string | undefined;
}

/** The item as the unit of work writes it: pending, with its TTL and, when numbered, its place in its aggregate. */
export function toOutboxItem(
  event: OutboxEvent,
  options: { retentionSeconds: number; pendingShards: number; position?: AggregatePosition },
): Record<string, AttributeValue> {
  const item: Record<string, AttributeValue> = {
    [A.pk]: s(outboxPk(event.aggregateType, event.aggregateId)),
    [A.sk]: s(outboxSk(event.eventId)),
    [A.itemType]: s(OUTBOX_ITEM_TYPE),
    [A.eventId]: s(event.eventId),
    [A.aggregateType]: s(event.aggregateType),
    [A.aggregateId]: s(event.aggregateId),
    [A.eventType]: s(event.eventType),
    [A.payload]: s(event.payload),
    [A.contentType]: s(event.contentType),
    [A.schemaVersion]: s(event.schemaVersion),
    [A.headers]: { M: Object.fromEntries(Object.entries(event.headers).map(([k, v]) => [k, s(v)])) },
    [A.createdAt]: n(event.createdAt),
    [A.destination]: s(event.destination),
    [A.pending]: s(pendingShard(event.aggregateType, event.aggregateId, options.pendingShards)),
    [A.pendingSince]: n(event.createdAt),
    // No TTL while pending (see A.expiresAt): clearPending starts it once the event is published.
    [A.retentionSeconds]: n(options.retentionSeconds),
  };
  if (event.causationId !== undefined) item[A.causationId] = s(event.causationId);
  if (options.position) {
    item[A.seq] = n(options.position.seq);
    if (options.position.prevSk !== undefined) item[A.prevSk] = s(options.position.prevSk);
  }
  return item;
}

/** The place in its aggregate an outbox item records, if it was written numbered (and the numbers are well formed). */
export function positionOf(item: Record<string, AttributeValue>): AggregatePosition | undefined {
  const seq = Number(item[A.seq]?.N);
  if (!Number.isSafeInteger(seq) || seq < 1) return undefined;
  return { seq, prevSk: item[A.prevSk]?.S };
}

/** True when the key says "outbox event" (what the stream filter matches on). */
export function isOutboxKey(image: Record<string, AttributeValue> | undefined): boolean {
  const pk = image?.[A.pk]?.S;
  return pk?.startsWith(OUTBOX_PK_PREFIX) ?? false;
}

/** Reads an outbox item strictly. Throws MalformedOutboxItemError naming the first bad attribute (never its value). */
export function parseOutboxItem(item: Record<string, AttributeValue>): OutboxEvent {
  const str = (name: string): string => {
    const v = item[name]?.S;
    if (v === undefined)
      throw new MalformedOutboxItemError(`outbox item: attribute '${name}' is missing or not a string`);
    return v;
  };
  const num = (name: string): number => {
    const raw = item[name]?.N;
    const v = raw === undefined ? Number.NaN : Number(raw);
    if (!Number.isFinite(v))
      throw new MalformedOutboxItemError(`outbox item: attribute '${name}' is missing or not a number`);
    return v;
  };
  const pk = str(A.pk);
  const sk = str(A.sk);
  if (!pk.startsWith(OUTBOX_PK_PREFIX) || !sk.startsWith(OUTBOX_SK_PREFIX))
    throw new MalformedOutboxItemError("outbox item: key is not an outbox key");
  const headersAttr = item[A.headers];
  if (headersAttr !== undefined && headersAttr.M === undefined)
    throw new MalformedOutboxItemError(`outbox item: attribute '${A.headers}' is not a map`);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(headersAttr?.M ?? {})) {
    if (v.S === undefined) throw new MalformedOutboxItemError(`outbox item: header '${k}' is not a string`);
    headers[k] = v.S;
  }
  const event: OutboxEvent = {
    eventId: str(A.eventId),
    aggregateType: str(A.aggregateType),
    aggregateId: str(A.aggregateId),
    eventType: str(A.eventType),
    payload: str(A.payload),
    contentType: item[A.contentType]?.S ?? "application/json",
    schemaVersion:
      item[A.schemaVersion]?.S ?? headers[OUTBOX_HEADERS.schemaVersion] ?? OUTBOX_DEFAULTS.schemaVersion,
    headers,
    createdAt: num(A.createdAt),
    destination: str(A.destination),
    causationId: item[A.causationId]?.S,
  };
  if (pk !== outboxPk(event.aggregateType, event.aggregateId) || sk !== outboxSk(event.eventId))
    throw new MalformedOutboxItemError("outbox item: key does not match its aggregate and event id");
  return event;
}

/** The headers published with an event (Kafka headers; SQS message attributes). */
export function publishedHeaders(event: OutboxEvent): Record<string, string> {
  return {
    ...event.headers,
    [OUTBOX_HEADERS.messageId]: event.eventId,
    [OUTBOX_HEADERS.eventType]: event.eventType,
    [OUTBOX_HEADERS.aggregateType]: event.aggregateType,
    [OUTBOX_HEADERS.aggregateId]: event.aggregateId,
    [OUTBOX_HEADERS.schemaVersion]: event.schemaVersion,
    [OUTBOX_HEADERS.contentType]: event.contentType,
    [OUTBOX_HEADERS.createdAt]: new Date(event.createdAt).toISOString(),
  };
}
