import { type AttributeValue, DynamoDBClient, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import type { SQSRecord } from "aws-lambda";
import type { Envelope } from "reliable-consumers";
import { PermanentError, TransientError } from "reliable-consumers";
import { BusinessConditionFailedError, createInboxOutbox, OUTBOX_HEADERS } from "reliable-consumers/outbox";
import { describe, expect, it } from "vitest";
import { KeyReuseError } from "../../lib/core/errors.ts";
import {
  MalformedOutboxItemError,
  TransactionConflictError,
  TransactionRejectedError,
  TransactionThrottledError,
  UnitOfWorkInvalidError,
  UnitOfWorkTooLargeError,
} from "../../lib/outbox/errors.ts";
import { itemSize } from "../../lib/outbox/itemSize.ts";
import {
  isTraceparent,
  parseOutboxItem,
  pendingShard,
  publishedHeaders,
  resolveNewEvent,
  toOutboxItem,
} from "../../lib/outbox/outboxEvent.ts";
import { parseDestination, toSqsAttributes } from "../../lib/outbox/publisher.ts";
import { tableNameFromStreamArn } from "../../lib/outbox/relay.ts";
import { OUTBOX_STREAM_FILTER_PATTERN } from "../../lib/outbox/schema.ts";
import { fromLambdaImage } from "../../lib/outbox/settle.ts";
import { interpretFailure } from "../../lib/outbox/transactionFailure.ts";
import {
  FOLDED_ATTRIBUTE,
  packAttributes,
  unpackAttributes,
  withMessageId,
} from "../../lib/sqs/attributePacking.ts";
import { plainAttributes } from "../../lib/sqs/deadLetter.ts";
import { toLambdaImage } from "../../local/src/services/dynamodb/streamRecord.ts";
import { matchesAnyFilter } from "../../local/src/services/lambda/eventFilter.ts";

const build = {
  now: 1_700_000_000_000,
  defaultDestination: "kafka:order-events",
  incomingTraceparent: undefined,
  causationId: "msg-1",
  retentionSeconds: 3600,
  pendingShards: 8,
};

const envelope = (id = "m-1"): Envelope<{ orderId: string }> => ({
  id,
  idSource: "business",
  key: undefined,
  body: { orderId: id },
  raw: JSON.stringify({ orderId: id }),
  headers: {},
  attempt: 1,
  source: { kind: "sqs", queueArn: "arn:aws:sqs:us-east-1:1:q", messageId: "x" },
});

describe("outbox events", () => {
  it("resolves defaults: UUIDv7 id, JSON payload, destination, a traceparent and schema version", () => {
    const e = resolveNewEvent(
      { aggregateType: "order", aggregateId: "o1", eventType: "OrderPlaced", payload: { a: 1 } },
      build,
    );
    expect(e.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    expect(e.payload).toBe('{"a":1}');
    expect(e.contentType).toBe("application/json");
    expect(e.destination).toBe("kafka:order-events");
    expect(isTraceparent(e.headers.traceparent)).toBe(true);
    expect(e.headers[OUTBOX_HEADERS.schemaVersion]).toBe("1");
    expect(e.causationId).toBe("msg-1");
  });

  it("propagates the incoming traceparent and keeps a string payload as is", () => {
    const tp = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01";
    const e = resolveNewEvent(
      { aggregateType: "order", aggregateId: "o1", eventType: "Noted", payload: "hello" },
      { ...build, incomingTraceparent: tp },
    );
    expect(e.headers.traceparent).toBe(tp);
    expect(e.payload).toBe("hello");
    expect(e.contentType).toBe("text/plain");
  });

  it("event ids are time-ordered, so an aggregate's sort keys follow creation order", () => {
    const ids = Array.from(
      { length: 50 },
      () =>
        resolveNewEvent({ aggregateType: "a", aggregateId: "1", eventType: "E", payload: 1 }, build).eventId,
    );
    expect([...ids].sort()).toEqual(ids);
  });

  it("rejects invalid staged events with a typed permanent error", () => {
    const bad = [
      { aggregateType: "", aggregateId: "1", eventType: "E", payload: 1 },
      { aggregateType: "a#b", aggregateId: "1", eventType: "E", payload: 1 },
      { aggregateType: "a", aggregateId: "1", eventType: "E", payload: undefined },
    ];
    for (const input of bad) expect(() => resolveNewEvent(input, build)).toThrow(UnitOfWorkInvalidError);
    expect(() =>
      resolveNewEvent(
        { aggregateType: "a", aggregateId: "1", eventType: "E", payload: 1 },
        { ...build, defaultDestination: undefined },
      ),
    ).toThrow(/destination/);
  });

  it("round-trips through the item, which is pending with a stable shard and no TTL until published", () => {
    const e = resolveNewEvent(
      { aggregateType: "order", aggregateId: "o1", eventType: "E", payload: { x: 1 } },
      build,
    );
    const item = toOutboxItem(e, { retentionSeconds: 3600, pendingShards: 8 });
    expect(item.pk?.S).toBe("OUTBOX#order#o1");
    expect(item.sk?.S).toBe(`EVENT#${e.eventId}`);
    expect(item.pending?.S).toBe(pendingShard("order", "o1", 8));
    expect(item.pendingSince?.N).toBe(String(build.now));
    // TTL must not delete an event nobody published: it starts when the event is cleared.
    expect(item.expiresAt).toBeUndefined();
    expect(item.retentionSeconds?.N).toBe("3600");
    expect(parseOutboxItem(item)).toEqual(e);
    // through the Lambda event's JSON shape and back
    expect(parseOutboxItem(fromLambdaImage(toLambdaImage(item)))).toEqual(e);
  });

  it("parses strictly: missing attributes and keys that do not match are typed errors naming no values", () => {
    const e = resolveNewEvent(
      { aggregateType: "order", aggregateId: "o1", eventType: "E", payload: "secret" },
      build,
    );
    const item = toOutboxItem(e, { retentionSeconds: 3600, pendingShards: 8 });
    const { payload: _p, ...noPayload } = item;
    expect(() => parseOutboxItem(noPayload)).toThrow(MalformedOutboxItemError);
    expect(() => parseOutboxItem({ ...item, aggregateId: { S: "other" } })).toThrow(/does not match/);
    expect(() => parseOutboxItem({ ...item, createdAt: { S: "x" } })).toThrow(/createdAt/);
    try {
      parseOutboxItem({ ...item, headers: { M: { a: { N: "1" } } } });
    } catch (error) {
      expect(error).toBeInstanceOf(PermanentError);
      expect(String(error)).not.toContain("secret");
    }
  });

  it("spreads aggregates over the pending shards, each aggregate on one shard", () => {
    const shards = new Set(Array.from({ length: 200 }, (_, i) => pendingShard("order", `o${i}`, 8)));
    expect(shards.size).toBe(8);
    expect(pendingShard("order", "o1", 8)).toBe(pendingShard("order", "o1", 8));
    expect(pendingShard("order", "o1", 1)).toBe("0");
  });

  it("publishes the event id as message-id plus type, aggregate, traceparent and schema version", () => {
    const e = resolveNewEvent(
      { aggregateType: "order", aggregateId: "o1", eventType: "E", payload: 1 },
      build,
    );
    const h = publishedHeaders(e);
    expect(h["message-id"]).toBe(e.eventId);
    expect(h["event-type"]).toBe("E");
    expect(h["aggregate-id"]).toBe("o1");
    expect(h.traceparent).toBe(e.headers.traceparent);
    expect(h["schema-version"]).toBe("1");
  });
});

describe("item size", () => {
  it("follows DynamoDB's rules closely enough to catch oversize units", () => {
    expect(itemSize({ a: { S: "héllo" } })).toBe(1 + 6);
    expect(itemSize({ n: { N: "12345" } })).toBe(1 + 4);
    expect(itemSize({ m: { M: { k: { S: "v" } } } })).toBe(1 + 3 + 1 + 1 + 1);
    expect(itemSize({ l: { L: [{ BOOL: true }, { NULL: true }] } })).toBe(1 + 3 + 2 + 2);
  });
});

describe("destinations and SQS attributes", () => {
  it("parses kafka:, sqs: and routes", () => {
    expect(parseDestination("kafka:order-events")).toEqual({ kind: "kafka", topic: "order-events" });
    expect(parseDestination("sqs:https://q/x.fifo")).toEqual({
      kind: "sqs",
      queueUrl: "https://q/x.fifo",
      fifo: true,
    });
    expect(parseDestination("orders", { orders: "sqs:https://q/x" })).toEqual({
      kind: "sqs",
      queueUrl: "https://q/x",
      fifo: false,
    });
    expect(parseDestination("nowhere")).toBeUndefined();
    expect(parseDestination("smtp:x")).toBeUndefined();
  });

  it("issue 34 item 5: a copy of a record whose headers were folded keeps all of them, within 10 attributes", () => {
    const e = resolveNewEvent(
      {
        aggregateType: "order",
        aggregateId: "o1",
        eventType: "E",
        payload: 1,
        headers: { tenant: "acme", region: "eu", plan: "gold", note: "" },
      },
      build,
    );
    const sent = toSqsAttributes(publishedHeaders(e));
    const record = {
      messageId: "m1",
      attributes: {},
      messageAttributes: Object.fromEntries(
        Object.entries(sent).map(([k, a]) => [k, { dataType: a.DataType!, stringValue: a.StringValue! }]),
      ),
    } as unknown as SQSRecord;
    // Every reader unfolds the same: the outbox's own attributes and the folded user headers.
    const plain = plainAttributes(record);
    expect(Object.keys(plain)).toHaveLength(Object.keys(publishedHeaders(e)).length);
    expect(plain.note?.StringValue).toBe("");
    // A park or a requeue sends them folded again, never an 11th attribute, and reads them back.
    for (const copy of [packAttributes(plain, { "x-last-error": "E: x" }), withMessageId(plain, e.eventId)]) {
      expect(Object.keys(copy).length).toBeLessThanOrEqual(10);
      expect(unpackAttributes(copy).attributes).toEqual(plain);
    }
  });

  it("never sends more than 10 attributes and never drops a header", () => {
    const e = resolveNewEvent(
      {
        aggregateType: "order",
        aggregateId: "o1",
        eventType: "E",
        payload: 1,
        headers: { a: "1", b: "2", c: "3" },
      },
      build,
    );
    const attrs = toSqsAttributes(publishedHeaders(e));
    expect(Object.keys(attrs).length).toBeLessThanOrEqual(10);
    // Folded in the one format every reader of ours unfolds (attributePacking.ts).
    expect(unpackAttributes(attrs as Parameters<typeof unpackAttributes>[0]).attributes).toMatchObject({
      a: { StringValue: "1" },
      b: { StringValue: "2" },
      c: { StringValue: "3" },
    });
    expect(attrs["message-id"]?.StringValue).toBe(e.eventId);
    const { a: _a, b: _b, c: _c, ...core } = e.headers;
    const few = toSqsAttributes(publishedHeaders({ ...e, headers: { ...core, a: "1" } }));
    expect(few.a?.StringValue).toBe("1");
    expect(few[FOLDED_ATTRIBUTE]).toBeUndefined();
  });
});

describe("stream filter and ARNs", () => {
  const record = (pk: string, pending: boolean, eventName = "INSERT") => ({
    eventName,
    dynamodb: {
      Keys: { pk: { S: pk } },
      NewImage: { pk: { S: pk }, ...(pending ? { pending: { S: "3" } } : {}) },
    },
  });
  it("lets through only INSERTs of pending outbox events", () => {
    expect(matchesAnyFilter([OUTBOX_STREAM_FILTER_PATTERN], record("OUTBOX#order#1", true))).toBe(true);
    expect(matchesAnyFilter([OUTBOX_STREAM_FILTER_PATTERN], record("OUTBOX#order#1", false))).toBe(false);
    expect(matchesAnyFilter([OUTBOX_STREAM_FILTER_PATTERN], record("OUTBOX#order#1", true, "MODIFY"))).toBe(
      false,
    );
    expect(matchesAnyFilter([OUTBOX_STREAM_FILTER_PATTERN], record("ORDER#1", true))).toBe(false);
    expect(matchesAnyFilter([OUTBOX_STREAM_FILTER_PATTERN], record("INBOX#s#1", false))).toBe(false);
  });
  it("reads the table name from a stream ARN", () => {
    expect(
      tableNameFromStreamArn(
        "arn:aws:dynamodb:ddblocal:000000000000:table/app-x/stream/2026-01-01T00:00:00.000",
      ),
    ).toBe("app-x");
    expect(tableNameFromStreamArn("nonsense")).toBeUndefined();
  });
});

describe("cancellation reasons", () => {
  const staged = [
    { label: "inbox-marker", kind: "marker" as const, onConditionFailed: undefined },
    { label: "order", kind: "business" as const, onConditionFailed: undefined },
    {
      label: "stock",
      kind: "business" as const,
      onConditionFailed: () => new PermanentError("out of stock"),
    },
    { label: "event:E", kind: "event" as const, onConditionFailed: undefined },
  ];
  const cancelled = (
    codes: string[],
    items: Array<Record<string, { S?: string; N?: string }> | undefined> = [],
  ) =>
    new TransactionCanceledException({
      message: "Transaction cancelled",
      $metadata: {},
      CancellationReasons: codes.map((Code, i) => ({
        Code,
        ...(items[i] ? { Item: items[i] as Record<string, AttributeValue> } : {}),
      })),
    });

  it("marker ConditionalCheckFailed → duplicate (with when it was first received)", () => {
    const out = interpretFailure(
      cancelled(["ConditionalCheckFailed", "None", "None", "None"], [{ receivedAt: { N: "42" } }]),
      staged,
      undefined,
      "s",
      "m",
    );
    expect(out).toEqual({ status: "duplicate", firstReceivedAt: 42 });
  });

  it("marker ConditionalCheckFailed with another payload hash → KeyReuseError when detection is on", () => {
    const out = interpretFailure(
      cancelled(["ConditionalCheckFailed", "None"], [{ payloadHash: { S: "aaa" } }]),
      staged,
      "bbb",
      "s",
      "m",
    );
    expect(out.status === "error" && out.error).toBeInstanceOf(KeyReuseError);
  });

  it("a business ConditionalCheckFailed → the write's own error, else BusinessConditionFailedError with the old item", () => {
    const own = interpretFailure(
      cancelled(["None", "None", "ConditionalCheckFailed", "None"]),
      staged,
      undefined,
      "s",
      "m",
    );
    expect(own.status === "error" && own.error.message).toBe("out of stock");
    const dflt = interpretFailure(
      cancelled(["None", "ConditionalCheckFailed", "None", "None"], [undefined, { pk: { S: "ORDER#1" } }]),
      staged,
      undefined,
      "s",
      "m",
    );
    expect(dflt.status === "error" && dflt.error).toBeInstanceOf(BusinessConditionFailedError);
    expect(dflt.status === "error" && (dflt.error as BusinessConditionFailedError).existing).toEqual({
      pk: "ORDER#1",
    });
  });

  it("TransactionConflict and throttling are transient; ValidationError is permanent", () => {
    const conflict = interpretFailure(
      cancelled(["None", "TransactionConflict"]),
      staged,
      undefined,
      "s",
      "m",
    );
    expect(conflict.status === "error" && conflict.error).toBeInstanceOf(TransactionConflictError);
    expect(conflict.status === "error" && conflict.error).toBeInstanceOf(TransientError);
    const throttled = interpretFailure(cancelled(["ThrottlingError", "None"]), staged, undefined, "s", "m");
    expect(throttled.status === "error" && throttled.error).toBeInstanceOf(TransactionThrottledError);
    const invalid = interpretFailure(cancelled(["None", "ValidationError"]), staged, undefined, "s", "m");
    expect(invalid.status === "error" && invalid.error).toBeInstanceOf(TransactionRejectedError);
    const network = new Error("socket hang up");
    expect(interpretFailure(network, staged, undefined, "s", "m")).toEqual({
      status: "error",
      error: network,
    });
  });
});

describe("unit of work pre-flight (nothing is sent)", () => {
  // A client pointed at a closed port: any request would fail loudly, and none is made.
  const client = new DynamoDBClient({ endpoint: "http://127.0.0.1:9", maxAttempts: 1 });

  it("refuses more than 100 actions, naming the count", async () => {
    const uow = createInboxOutbox({ tableName: "t", scope: "s", client, defaultDestination: "kafka:x" });
    const run = uow.run(envelope(), (tx) => {
      for (let i = 0; i < 60; i++) tx.put({ Item: { pk: `A#${i}`, sk: "A" } });
      for (let i = 0; i < 40; i++)
        tx.publish({ aggregateType: "a", aggregateId: "1", eventType: "E", payload: i });
    });
    await expect(run).rejects.toBeInstanceOf(UnitOfWorkTooLargeError);
    // The aggregate's head counts as an action too (aggregateSequence).
    await expect(run).rejects.toThrow(
      /102 actions \(inbox marker \+ 60 writes \+ 40 events \+ 1 aggregate head\)/,
    );
    const unnumbered = createInboxOutbox({
      tableName: "t",
      scope: "s",
      client,
      defaultDestination: "kafka:x",
      aggregateSequence: false,
    });
    await expect(
      unnumbered.run(envelope(), (tx) => {
        for (let i = 0; i < 61; i++) tx.put({ Item: { pk: `A#${i}`, sk: "A" } });
        for (let i = 0; i < 40; i++)
          tx.publish({ aggregateType: "a", aggregateId: "1", eventType: "E", payload: i });
      }),
    ).rejects.toThrow(/102 actions \(inbox marker \+ 61 writes \+ 40 events\)/);
  });

  it("refuses an item over 400 KB and a unit over 4 MB", async () => {
    const uow = createInboxOutbox({ tableName: "t", scope: "s", client, defaultDestination: "kafka:x" });
    await expect(
      uow.run(envelope(), (tx) => {
        tx.put({ Item: { pk: "A", sk: "A", blob: "x".repeat(410 * 1024) } });
      }),
    ).rejects.toThrow(/an item holds at most/);
    await expect(
      uow.run(envelope(), (tx) => {
        for (let i = 0; i < 12; i++)
          tx.put({ Item: { pk: `A#${i}`, sk: "A", blob: "x".repeat(390 * 1024) } });
      }),
    ).rejects.toThrow(/one transaction holds at most 4194304/);
  });

  it("refuses two writes to one item, and the handler's own errors leave nothing staged behind", async () => {
    const uow = createInboxOutbox({ tableName: "t", scope: "s", client });
    await expect(
      uow.run(envelope(), (tx) => {
        tx.put({ Item: { pk: "A", sk: "1" } }, { label: "first" });
        tx.update({
          Key: { pk: "A", sk: "1" },
          UpdateExpression: "SET x = :x",
          ExpressionAttributeValues: { ":x": 1 },
        });
      }),
    ).rejects.toThrow(/'first' and 'update#2' target the same item/);
    await expect(
      uow.run(envelope(), () => {
        throw new PermanentError("business says no");
      }),
    ).rejects.toThrow("business says no");
  });
});
