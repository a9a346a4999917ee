import { readConfluentFrame, readGlueFrame } from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";
import { WireFormatError } from "../../lib/kafka/schemas/errors.ts";
import { writeConfluentFrame, writeGlueFrame } from "../../lib/kafka/schemas/wireFormat.ts";
import golden from "../fixtures/schemas/golden.json" with { type: "json" };

const hex = (h: string) => Buffer.from(h, "hex");

describe("Confluent wire format", () => {
  it("reads the golden Avro bytes of Confluent's serializer: magic 0, 4-byte id, payload", () => {
    const f = readConfluentFrame(hex(golden.confluentAvro.hex));
    expect(f.schemaId).toBe(1);
    expect(f.messageIndexes).toBeUndefined();
    expect(f.payload.toString("hex")).toBe("06702d3154");
    expect(writeConfluentFrame(1, f.payload).toString("hex")).toBe(golden.confluentAvro.hex);
  });

  it("reads and writes Protobuf message indexes ([0] as one 0 byte, else count + zig-zag varints)", () => {
    for (const g of golden.confluentProtobufIndexes) {
      const f = readConfluentFrame(hex(`${g.hex}0801`), { protobuf: true });
      expect(f).toMatchObject({ schemaId: 3, messageIndexes: g.indexes });
      expect(f.payload.toString("hex")).toBe("0801");
      expect(writeConfluentFrame(3, hex("0801"), g.indexes).toString("hex")).toBe(`${g.hex}0801`);
    }
    // Indexes past 63 need a second varint byte.
    const deep = writeConfluentFrame(9, hex("08"), [2, 100]);
    expect(readConfluentFrame(deep, { protobuf: true }).messageIndexes).toEqual([2, 100]);
  });

  it("rejects a wrong magic byte, short bytes and truncated varints with WireFormatError", () => {
    const bad: [string, RegExp, boolean][] = [
      ["0100000001aa", /magic byte is 1, expected 0/, false],
      ["00000001", /too short/, false],
      ["", /too short/, false],
      ["000000000380", /truncated varint/, true], // count byte has its continuation bit set, then nothing
      ["00000000030402", /truncated varint/, true], // count 2, one index, then nothing
      ["0000000003ffffffffff01", /longer than 5 bytes/, true],
    ];
    for (const [h, message, protobuf] of bad) {
      const error = (() => {
        try {
          readConfluentFrame(hex(h), { protobuf });
        } catch (e) {
          return e;
        }
      })();
      expect(error, h).toBeInstanceOf(WireFormatError);
      expect((error as Error).message, h).toMatch(message);
      expect((error as WireFormatError).name).toBe("WireFormatError");
      expect((error as { kind: string }).kind).toBe("permanent");
    }
  });
});

describe("Glue Schema Registry wire format", () => {
  it("reads the header byte 3, the compression byte and the 16-byte schema version UUID", () => {
    const f = readGlueFrame(hex(golden.glueAvro.hex));
    expect(f).toMatchObject({ schemaVersionId: golden.glueAvro.schemaVersionId, compression: "none" });
    expect(f.payload.toString("hex")).toBe("06702d3154");
    expect(writeGlueFrame(golden.glueAvro.schemaVersionId, f.payload).toString("hex")).toBe(
      golden.glueAvro.hex,
    );
  });

  it("rejects another header byte, an unknown compression byte and short bytes", () => {
    const uuid = "b7b4a7f00f5e4a9c8c597e3a5d1c2b10";
    expect(() => readGlueFrame(hex(`0200${uuid}06`))).toThrow(/header version byte is 2/);
    expect(() => readGlueFrame(hex(`0307${uuid}06`))).toThrow(/compression byte is 7/);
    expect(() => readGlueFrame(hex("0300b7b4"))).toThrow(WireFormatError);
  });
});
