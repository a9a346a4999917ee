import {
  InvalidJsonError,
  MissingIdError,
  PayloadTooLargeError,
  SchemaValidationError,
  UnknownEventShapeError,
} from "reliable-consumers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MalformedRecordError } from "../../lib/core/errors.ts";
import { BinaryHeaderError, BinaryKeyError, toKafkaEnvelope } from "../../lib/kafka/kafkaEnvelope.ts";
import { readKafkaEvent } from "../../lib/kafka/mskEvent.ts";
import { kafkaBatchResponse } from "../../lib/kafka/partialResponse.ts";

const b64 = (s: string) => Buffer.from(s).toString("base64");
const bytes = (s: string) => [...Buffer.from(s)];

function record(over: Record<string, unknown> = {}) {
  return {
    topic: "orders",
    partition: 0,
    offset: 15,
    timestamp: 1545084650987,
    timestampType: "CREATE_TIME",
    key: b64("order-1"),
    value: b64('{"amount":5}'),
    headers: [{ "message-id": bytes("m-1") }],
    ...over,
  };
}
const event = (records: Record<string, unknown[]>) => ({
  eventSource: "aws:kafka",
  eventSourceArn: "arn:aws:kafka:us-east-1:123456789012:cluster/c/abc",
  records,
});

describe("MSK event adapter", () => {
  it("decodes the documented example (base64 key/value, header byte arrays)", async () => {
    const [view] = readKafkaEvent(event({ "orders-0": [record()] }));
    const env = await toKafkaEnvelope(view!);
    expect(env).toMatchObject({
      id: "m-1",
      idSource: "producer",
      key: "order-1",
      body: { amount: 5 },
      raw: '{"amount":5}',
      headers: { "message-id": "m-1" },
      attempt: 1,
      source: { kind: "kafka", topic: "orders", partition: 0, offset: "15" },
    });
  });

  it("falls back to topic:partition:offset, and honours a business key first", async () => {
    const [view] = readKafkaEvent(event({ "orders-0": [record({ headers: [] })] }));
    expect(await toKafkaEnvelope(view!)).toMatchObject({ id: "orders:0:15", idSource: "broker" });
    const keyed = await toKafkaEnvelope(view!, { key: (b: { amount: number }) => `pay-${b.amount}` });
    expect(keyed).toMatchObject({ id: "pay-5", idSource: "business" });
    await expect(toKafkaEnvelope(view!, { key: () => "" })).rejects.toBeInstanceOf(MissingIdError);
  });

  it("keeps the original id and attempt through the retry ladder headers", async () => {
    const [view] = readKafkaEvent(
      event({
        "orders.retry.1m-2": [
          record({
            topic: "orders.retry.1m",
            partition: 2,
            headers: [{ "x-message-id": bytes("orders:0:15") }, { "x-retry-count": bytes("2") }],
          }),
        ],
      }),
    );
    expect(await toKafkaEnvelope(view!)).toMatchObject({ id: "orders:0:15", attempt: 3 });
  });

  it("accepts a null key, and Java's signed header bytes", async () => {
    const [view] = readKafkaEvent(
      event({ "orders-0": [record({ key: null, headers: [{ h: [-61, -87] }] })] }), // "é" as signed bytes
    );
    const env = await toKafkaEnvelope(view!);
    expect(env.key).toBeUndefined();
    expect(env.headers.h).toBe("é");
  });

  it("orders each partition by offset and keeps the map key for the partial response", () => {
    const views = readKafkaEvent(
      event({
        "orders-1": [record({ partition: 1, offset: 9 }), record({ partition: 1, offset: 7 })],
        "orders-0": [record({ offset: 3 })],
      }),
    );
    expect(views.map((v) => `${v.partitionKey}@${v.offset}`)).toEqual([
      "orders-1@7",
      "orders-1@9",
      "orders-0@3",
    ]);
  });

  it("rejects an unknown event shape as a whole", () => {
    expect(() => readKafkaEvent({ Records: [] })).toThrow(UnknownEventShapeError);
    expect(() => readKafkaEvent({ eventSource: "aws:sqs", records: {} })).toThrow(UnknownEventShapeError);
    expect(() => readKafkaEvent(event({ "orders-0": [{ topic: "orders" }] }))).toThrow(
      UnknownEventShapeError,
    );
    expect(() => readKafkaEvent(event({ "orders-9": [record()] }))).toThrow(/map key does not match/);
    expect(readKafkaEvent({ eventSource: "SelfManagedKafka", records: {} })).toEqual([]);
  });

  it("gives bad bytes typed, permanent errors per record", async () => {
    const cases: [Record<string, unknown>, new (...a: never[]) => Error, RegExp, object?][] = [
      [{ headers: [{ h: [300] }] }, MalformedRecordError, /not a byte/],
      [{ headers: "nope" }, MalformedRecordError, /headers is not an array/],
      [{ value: "%%%not-base64" }, MalformedRecordError, /value is not valid base64/],
      [
        { value: Buffer.from([0xc3, 0x28]).toString("base64") },
        MalformedRecordError,
        /value is not valid UTF-8/,
      ],
      [{ value: null }, MalformedRecordError, /null/, { allowNullValue: false }],
      [{ value: b64("{oops") }, InvalidJsonError, /not valid JSON/],
    ];
    for (const [over, type, message, options] of cases) {
      const [view] = readKafkaEvent(event({ "orders-0": [record(over)] }));
      const error = await toKafkaEnvelope(view!, options).catch((e: unknown) => e);
      expect(error, JSON.stringify(over)).toBeInstanceOf(type);
      expect((error as Error).message).toMatch(message);
      expect((error as { kind: string }).kind).toBe("permanent");
    }
  });

  it("validates size and schema, and allows tombstones when asked", async () => {
    const [view] = readKafkaEvent(event({ "orders-0": [record()] }));
    await expect(toKafkaEnvelope(view!, { maxValueBytes: 4 })).rejects.toBeInstanceOf(PayloadTooLargeError);
    const schema = z.object({ amount: z.string() });
    await expect(toKafkaEnvelope(view!, { schema })).rejects.toBeInstanceOf(SchemaValidationError);
    const [tomb] = readKafkaEvent(event({ "orders-0": [record({ value: null })] }));
    expect((await toKafkaEnvelope(tomb!, { allowNullValue: true, schema })).body).toBeNull();
    // Issue 16 item 3: a tombstone is not bad input; by default the handler sees it, unvalidated.
    expect(await toKafkaEnvelope(tomb!, { schema })).toMatchObject({ body: null, tombstone: true });
    expect((await toKafkaEnvelope(view!)).tombstone).toBe(false);
    const [raw] = readKafkaEvent(event({ "orders-0": [record({ value: b64("\u0001bin") })] }));
    expect((await toKafkaEnvelope(raw!, { parse: "bytes" })).body).toEqual(Buffer.from("\u0001bin"));
  });
});

describe("binary headers and keys (issue 14 item 11)", () => {
  // AWS's sample MSK event carries header bytes; many producers put binary values (trace ids,
  // Avro-encoded context, UUIDs as 16 bytes) in headers. Kafka headers are bytes, not text.
  const binary = [0xff, 0xfe, 0x00, 0x7f];
  it("gives the handler the bytes and decodes text only when asked", async () => {
    const [view] = readKafkaEvent(
      event({ "orders-0": [record({ headers: [{ "message-id": bytes("m-1") }, { trace: binary }] })] }),
    );
    const env = await toKafkaEnvelope(view!);
    expect(env.body).toEqual({ amount: 5 });
    expect(env.headers["message-id"]).toBe("m-1");
    expect(env.headerBytes.trace).toEqual(Buffer.from(binary));
    expect(env.headerBytes["message-id"]).toEqual(Buffer.from("m-1"));
    // The text form of a binary header does not exist: reading it is a typed, permanent error
    // (so only a handler that needs it sends the record to the DLQ), and listing skips it.
    expect(Object.keys(env.headers)).toEqual(["message-id"]);
    expect("trace" in env.headers).toBe(true);
    let error: unknown;
    try {
      void env.headers.trace;
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BinaryHeaderError);
    expect(error).toBeInstanceOf(MalformedRecordError);
    expect((error as BinaryHeaderError).name).toBe("BinaryHeaderError");
    expect((error as Error).message).toMatch(/header 'trace' is not UTF-8 text.*headerBytes/);
    expect({ ...env.headers }).toEqual({ "message-id": "m-1" });
    expect(JSON.stringify(env.headers)).toBe('{"message-id":"m-1"}');
  });

  it("a binary producer id is still an id (hex), a binary key is bytes with a lazy text form", async () => {
    const [view] = readKafkaEvent(
      event({
        "orders-0": [
          record({ key: Buffer.from(binary).toString("base64"), headers: [{ "message-id": binary }] }),
        ],
      }),
    );
    const env = await toKafkaEnvelope(view!);
    expect(env).toMatchObject({ id: "0xfffe007f", idSource: "producer" });
    expect(env.keyBytes).toEqual(Buffer.from(binary));
    expect(() => env.key).toThrow(BinaryKeyError);
    expect(Object.keys(env)).not.toContain("key");
    const [text] = readKafkaEvent(event({ "orders-0": [record()] }));
    const t = await toKafkaEnvelope(text!);
    expect(t.key).toBe("order-1");
    expect(t.keyBytes).toEqual(Buffer.from("order-1"));
  });
});

describe("Kafka partial batch response", () => {
  it("reports the lowest unfinished offset of each partition, as {partition, offset}", () => {
    expect(
      kafkaBatchResponse([
        { partitionKey: "orders-1", offset: 12 },
        { partitionKey: "orders-0", offset: 4 },
        { partitionKey: "orders-1", offset: 10 },
      ]),
    ).toEqual({
      batchItemFailures: [
        { itemIdentifier: { partition: "orders-1", offset: 10 } },
        { itemIdentifier: { partition: "orders-0", offset: 4 } },
      ],
    });
    expect(kafkaBatchResponse([])).toEqual({ batchItemFailures: [] });
  });
});
