import avsc from "avsc";
import protobufjs from "protobufjs";
import { SchemaValidationError } from "reliable-consumers";
import { avro, protobuf } from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toKafkaEnvelope } from "../../lib/kafka/kafkaEnvelope.ts";
import { readKafkaEvent } from "../../lib/kafka/mskEvent.ts";

// Issue 26 item 1: a decoded value is plain data, as JSON's is, so any Standard Schema (a strict one
// included) accepts a valid record. avsc decoded records into class instances whose prototype
// methods (`clone`, `toBuffer`, …) a strict zod schema saw as "Unrecognized keys".

/** Every object in `v` is a plain object (or an array, or a Buffer): no class instances. */
function expectPlain(v: unknown, path = "value"): void {
  if (v === null || typeof v !== "object" || Buffer.isBuffer(v)) return;
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) expectPlain(x, `${path}[${i}]`);
    return;
  }
  expect(Object.getPrototypeOf(v), path).toBe(Object.prototype);
  const inherited: string[] = [];
  for (const key in v) if (!Object.hasOwn(v, key)) inherited.push(key);
  expect(inherited, `${path}: keys seen by for…in`).toEqual([]);
  for (const [k, x] of Object.entries(v)) expectPlain(x, `${path}.${k}`);
}

const event = (value: Buffer) => ({
  eventSource: "aws:kafka",
  records: {
    "pay-0": [
      {
        topic: "pay",
        partition: 0,
        offset: 0,
        timestamp: 0,
        key: null,
        value: value.toString("base64"),
        headers: [],
      },
    ],
  },
});

const Order = {
  type: "record",
  name: "Order",
  namespace: "shop",
  fields: [
    { name: "id", type: "string" },
    { name: "amount", type: "long" },
    { name: "raw", type: "bytes" },
    { name: "kind", type: { type: "enum", name: "Kind", symbols: ["CARD", "BANK"] } },
    {
      name: "line",
      type: ["null", { type: "record", name: "Line", fields: [{ name: "sku", type: "string" }] }],
    },
    { name: "lines", type: { type: "array", items: "Line" } },
    { name: "tags", type: { type: "map", values: "Line" } },
  ],
};

describe("Avro decodes into plain data", () => {
  const type = avsc.Type.forSchema(Order as avsc.Schema);
  const input = {
    id: "o-1",
    amount: 2 ** 40,
    raw: Buffer.from("hi"),
    kind: "BANK",
    line: { sku: "a" },
    lines: [{ sku: "b" }],
    tags: { x: { sku: "c" } },
  };

  it("records, nested records, arrays and maps are plain objects; bytes Buffers; enums strings; long numbers", async () => {
    const decoded = await avro({ schema: Order }).decode(type.toBuffer(input));
    expectPlain(decoded);
    expect(decoded).toEqual(input);
  });

  it("a strict Standard Schema accepts a valid decoded record through the consumer's envelope", async () => {
    const schema = z
      .object({
        id: z.string(),
        amount: z.number().int(),
        raw: z.instanceof(Buffer),
        kind: z.enum(["CARD", "BANK"]),
        line: z.object({ sku: z.string() }).strict().nullable(),
        lines: z.array(z.object({ sku: z.string() }).strict()),
        tags: z.record(z.string(), z.object({ sku: z.string() }).strict()),
      })
      .strict();
    const [view] = readKafkaEvent(event(type.toBuffer(input)));
    const envelope = await toKafkaEnvelope(view!, { parse: avro({ schema: Order }), schema });
    expect(envelope.body).toEqual(input);
    // And the strict schema still refuses what is really not in it.
    const loose = z.object({ id: z.string() }).strict();
    const refused = await toKafkaEnvelope(view!, { parse: avro({ schema: Order }), schema: loose }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(SchemaValidationError);
    expect((refused as Error).message).not.toMatch(/clone|toBuffer|isValid/);
  });

  it("a value resolved from an older writer is plain too", async () => {
    const writer = avsc.Type.forSchema({
      type: "record",
      name: "Order",
      namespace: "shop",
      fields: [{ name: "id", type: "string" }],
    });
    const reader = { ...Order, fields: [Order.fields[0], { name: "note", type: "string", default: "none" }] };
    const decoded = await avro({
      schema: reader,
      registry: {
        kind: "confluent",
        fetchSchema: async (id) => ({ id, format: "AVRO", definition: JSON.stringify(writer.schema()) }),
        idFor: async () => "1",
      },
    }).decode(Buffer.concat([Buffer.from([0, 0, 0, 0, 1]), writer.toBuffer({ id: "o-2" })]));
    expectPlain(decoded);
    expect(decoded).toEqual({ id: "o-2", note: "none" });
  });
});

const PROTO = `syntax = "proto3";
package shop;
enum Kind { KIND_UNSPECIFIED = 0; CARD = 1; }
message Line { string sku = 1; }
message Order {
  int64 big = 1;
  uint64 ubig = 2;
  sint64 neg = 3;
  bytes raw = 4;
  Kind kind = 5;
  Line line = 6;
  repeated Line lines = 7;
  map<string, int32> counts = 8;
  oneof pay { string card = 9; int32 bank = 10; }
  Line missing = 11;
  string note = 12;
}`;

describe("Protobuf decodes into plain data, in the documented forms", () => {
  const type = protobufjs.parse(PROTO, { keepCase: true }).root.lookupType("shop.Order");
  const bytes = Buffer.from(
    type
      .encode(
        type.create({
          big: "9223372036854775807",
          ubig: "18446744073709551615",
          neg: "-9223372036854775808",
          raw: Buffer.from("hi"),
          kind: 1,
          line: { sku: "a" },
          lines: [{ sku: "b" }],
          counts: { x: 2 },
          bank: 5,
        }),
      )
      .finish(),
  );

  it("64-bit integers as decimal strings, bytes as Buffers, enums by name, unset fields as defaults", async () => {
    const decoded = await protobuf({ type }).decode(bytes);
    expectPlain(decoded);
    expect(decoded).toEqual({
      big: "9223372036854775807",
      ubig: "18446744073709551615",
      neg: "-9223372036854775808",
      raw: Buffer.from("hi"),
      kind: "CARD",
      line: { sku: "a" },
      lines: [{ sku: "b" }],
      counts: { x: 2 },
      bank: 5,
      missing: null,
      note: "",
    });
    // An enum number the reader does not know stays a number.
    expect(await protobuf({ type }).decode(Buffer.from([0x28, 0x07]))).toMatchObject({ kind: 7 });
  });

  it("a strict Standard Schema accepts a valid decoded message", async () => {
    const schema = z
      .object({
        big: z.string().regex(/^-?\d+$/),
        ubig: z.string(),
        neg: z.string(),
        raw: z.instanceof(Buffer),
        kind: z.enum(["KIND_UNSPECIFIED", "CARD"]),
        line: z.object({ sku: z.string() }).strict().nullable(),
        lines: z.array(z.object({ sku: z.string() }).strict()),
        counts: z.record(z.string(), z.number()),
        card: z.string().optional(),
        bank: z.number().optional(),
        missing: z.object({ sku: z.string() }).strict().nullable(),
        note: z.string(),
      })
      .strict();
    const [view] = readKafkaEvent(event(bytes));
    const envelope = await toKafkaEnvelope(view!, { parse: protobuf({ type }), schema });
    expect(envelope.body).toMatchObject({ big: "9223372036854775807", kind: "CARD" });
  });
});
