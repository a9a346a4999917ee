import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  InvalidJsonError,
  MalformedRecordError,
  MissingIdError,
  PayloadTooLargeError,
  SchemaValidationError,
  UnknownEventShapeError,
} from "../../lib/core/errors.ts";
import { toKafkaEnvelope } from "../../lib/kafka/kafkaEnvelope.ts";
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
    const cases: [Record<string, unknown>, new (...a: never[]) => Error, RegExp][] = [
      [{ headers: [{ h: [300] }] }, MalformedRecordError, /not a byte/],
      [{ headers: [{ h: [0xff, 0xfe] }] }, MalformedRecordError, /header 'h' is not valid UTF-8/],
      [{ headers: "nope" }, MalformedRecordError, /headers is not an array/],
      [{ value: "%%%not-base64" }, MalformedRecordError, /value is not valid base64/],
      [
        { value: Buffer.from([0xc3, 0x28]).toString("base64") },
        MalformedRecordError,
        /value is not valid UTF-8/,
      ],
      [{ key: Buffer.from([0xff]).toString("base64") }, MalformedRecordError, /key is not valid UTF-8/],
      [{ value: null }, MalformedRecordError, /null/],
      [{ value: b64("{oops") }, InvalidJsonError, /not valid JSON/],
    ];
    for (const [over, type, message] of cases) {
      const [view] = readKafkaEvent(event({ "orders-0": [record(over)] }));
      const error = await toKafkaEnvelope(view!).catch((e: unknown) => e);
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
    const [raw] = readKafkaEvent(event({ "orders-0": [record({ value: b64("\u0001bin") })] }));
    expect((await toKafkaEnvelope(raw!, { parse: "bytes" })).body).toEqual(Buffer.from("\u0001bin"));
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
