import avsc from "avsc";
import protobufjs from "protobufjs";
import { avro, type SchemaRegistry } from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";
import { reframedForReplay, replayMessage } from "../../lib/dlq/replayMessage.ts";
import { lambdaDecodedParts } from "../../lib/kafka/lambdaDecoded.ts";
import { readKafkaEvent } from "../../lib/kafka/mskEvent.ts";
import { reframePart } from "../../lib/kafka/reframe.ts";
import { routedMessage } from "../../lib/kafka/routedMessage.ts";
import { UnencodableValueError } from "../../lib/kafka/schemas/errors.ts";
import { writeConfluentFrame, writeGlueFrame } from "../../lib/kafka/schemas/wireFormat.ts";

// Issue 34 item 1: what a registry mapping hands over (JSON, or SOURCE without the framing) is what
// copies carry, said by a header; a replay frames it again for the main topic's mapping.

const Payment = {
  type: "record",
  name: "ReframePayment",
  fields: [
    { name: "id", type: "string" },
    { name: "tag", type: ["null", "string"], default: null },
    { name: "raw", type: "bytes" },
  ],
};
const PROTO = 'syntax = "proto3"; package shop; message Order { string id = 1; int64 cents = 2; }';
const GLUE_ID = "0b0c5a2e-8b1f-4b8e-9d43-6f1a2b3c4d5e";

/** Writer schemas by id, as a registry answers them (no network: the logic under test is pure). */
function registryOf(
  kind: "confluent" | "glue",
  schemas: Record<string, { format: string; definition: string }>,
) {
  return {
    kind,
    async fetchSchema(id: string) {
      const s = schemas[id];
      if (!s) throw new Error(`no schema ${id}`);
      return { id, format: s.format, definition: s.definition };
    },
    async idFor() {
      throw new Error("not used");
    },
  } as SchemaRegistry;
}

const avroType = avsc.Type.forSchema(Payment as avsc.Schema);
const value = { id: "p-1", tag: "x", raw: Buffer.from([0, 255, 7]) };

describe("a part a registry mapping handed over, framed again (reframePart)", () => {
  it("SOURCE: the framing goes back with the id; Confluent's bytes are the original ones", async () => {
    const framed = writeConfluentFrame(42, avroType.toBuffer(value));
    const none = () => undefined;
    expect(await reframePart(framed.subarray(5), { recordFormat: "SOURCE", schemaId: "42" }, none)).toEqual(
      framed,
    );
    const payload = avroType.toBuffer(value);
    expect(await reframePart(payload, { recordFormat: "SOURCE", schemaId: GLUE_ID }, none)).toEqual(
      writeGlueFrame(GLUE_ID, payload),
    );
  });

  it("JSON: encoded again with the writer's schema (Avro, Protobuf, JSON Schema), as the decoders render values", async () => {
    const registry = registryOf("confluent", {
      "7": { format: "AVRO", definition: JSON.stringify(Payment) },
      "8": { format: "PROTOBUF", definition: PROTO },
      "9": { format: "JSON", definition: '{"type":"object"}' },
    });
    const framedAvro = writeConfluentFrame(7, avroType.toBuffer(value));
    // The JSON a mapping hands over: the decoded value as JSON (a Buffer as JSON.stringify writes it).
    const decoded = await avro({ registry }).decode(framedAvro);
    const json = Buffer.from(JSON.stringify(decoded));
    expect(await reframePart(json, { recordFormat: "JSON", schemaId: "7" }, () => registry)).toEqual(
      framedAvro,
    );

    const order = protobufjs.parse(PROTO).root.lookupType("shop.Order");
    const framedPb = writeConfluentFrame(
      8,
      order.encode(order.fromObject({ id: "o", cents: 5 })).finish(),
      [0],
    );
    const pbJson = Buffer.from(JSON.stringify({ id: "o", cents: "5" }));
    expect(await reframePart(pbJson, { recordFormat: "JSON", schemaId: "8" }, () => registry)).toEqual(
      framedPb,
    );

    const text = Buffer.from('{"a":1}');
    expect(await reframePart(text, { recordFormat: "JSON", schemaId: "9" }, () => registry)).toEqual(
      writeConfluentFrame(9, text),
    );
  });

  it("refuses what it cannot frame: no id, JSON without a registry, a value the schema does not take", async () => {
    const registry = registryOf("confluent", {
      "7": { format: "AVRO", definition: JSON.stringify(Payment) },
    });
    const none = () => undefined;
    await expect(reframePart(Buffer.from("x"), { recordFormat: "SOURCE" }, none)).rejects.toBeInstanceOf(
      UnencodableValueError,
    );
    await expect(
      reframePart(Buffer.from("{}"), { recordFormat: "JSON", schemaId: "7" }, none),
    ).rejects.toBeInstanceOf(UnencodableValueError);
    await expect(
      reframePart(Buffer.from('{"id":3}'), { recordFormat: "JSON", schemaId: "7" }, () => registry),
    ).rejects.toBeInstanceOf(UnencodableValueError);
  });
});

function view(headers: Array<Record<string, number[]>>, metadata?: { dataFormat: string; schemaId: string }) {
  return readKafkaEvent({
    eventSource: "aws:kafka",
    records: {
      "orders-0": [
        {
          topic: "orders",
          partition: 0,
          offset: 3,
          timestamp: 0,
          key: Buffer.from("k").toString("base64"),
          value: Buffer.from('{"id":"p-1"}').toString("base64"),
          headers,
          ...(metadata ? { valueSchemaMetadata: metadata } : {}),
        },
      ],
    },
  })[0]!;
}

describe("which parts a record carries decoded, and its copies say so", () => {
  const mode = { eventRecordFormat: "JSON" as const, attributes: ["VALUE" as const] };

  it("the mapping's mode and the record's metadata, or a copy's header, which wins", () => {
    const main = view([], { dataFormat: "AVRO", schemaId: "7" });
    expect(lambdaDecodedParts(main, mode)).toEqual({
      value: { recordFormat: "JSON", dataFormat: "AVRO", schemaId: "7" },
    });
    expect(lambdaDecodedParts(main, false)).toEqual({});
    const header = Buffer.from('{"recordFormat":"SOURCE","dataFormat":"AVRO","schemaId":"9"}');
    const copy = view([{ "x-value-schema": [...header] }]);
    expect(lambdaDecodedParts(copy, mode)).toEqual({
      value: { recordFormat: "SOURCE", dataFormat: "AVRO", schemaId: "9" },
    });
    expect(lambdaDecodedParts(copy, false)).toEqual(lambdaDecodedParts(copy, mode));
  });

  it("a copy carries the form once, and a replay frames the part again and drops the header", async () => {
    const m = routedMessage({
      record: view([{ "x-value-schema": [...Buffer.from('{"recordFormat":"JSON","schemaId":"1"}')] }]),
      route: { kind: "dead-letter", topic: "orders.DLQ", retryCount: 1, reason: "permanent" },
      error: new Error("x"),
      messageId: "m",
      consumer: "c",
      now: new Date(0),
      decoded: { value: { recordFormat: "SOURCE", dataFormat: "AVRO", schemaId: "42" } },
    });
    expect(m.headers.filter((h) => h.name === "x-value-schema").map((h) => String(h.value))).toEqual([
      '{"recordFormat":"SOURCE","dataFormat":"AVRO","schemaId":"42"}',
    ]);
    const headers = Object.fromEntries(m.headers.map((h) => [h.name, Buffer.from(h.value)]));
    const letter = {
      topic: "orders.DLQ",
      partition: 0,
      offset: "0",
      message: {
        key: Buffer.from("k"),
        value: Buffer.from("payload"),
        headers,
        timestamp: "0",
        offset: "0",
        attributes: 0,
      },
    };
    const replay = await reframedForReplay(replayMessage(letter, new Date(0)), () => undefined);
    expect(replay.value).toEqual(writeConfluentFrame(42, Buffer.from("payload")));
    expect(replay.key).toEqual(Buffer.from("k"));
    expect(replay.headers.some((h) => h.name === "x-value-schema")).toBe(false);
  });
});
