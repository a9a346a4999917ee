import { WireFormatError } from "./errors.ts";

/**
 * The two registry framings a Kafka value or key may carry.
 *
 * Confluent (docs.confluent.io "Wire format"): byte 0 is the magic byte 0, bytes 1–4 the schema id
 * (big-endian int32), then, for Protobuf only, the message indexes that locate the message type in
 * the schema's .proto file, then the payload. The indexes are a zig-zag varint count followed by
 * that many zig-zag varints; the common case, the first message ([0]), is written as one 0 byte.
 *
 * AWS Glue Schema Registry (the Glue SerDe's wire format): byte 0 is the header version 3, byte 1
 * the compression (0 none, 5 zlib), bytes 2–17 the schema version id (a UUID), then the payload.
 */
export type Framing = "confluent" | "glue" | "none";

export const CONFLUENT_MAGIC = 0;
export const GLUE_HEADER_VERSION = 3;
export const GLUE_COMPRESSION = { none: 0, zlib: 5 } as const;

export interface ConfluentFrame {
  readonly schemaId: number;
  /** Protobuf only (`protobuf: true`): the path to the message type; `[0]` is the first message. */
  readonly messageIndexes: readonly number[] | undefined;
  readonly payload: Buffer;
}

export interface GlueFrame {
  readonly schemaVersionId: string;
  readonly compression: "none" | "zlib";
  /** Still compressed when `compression` is zlib: see `glueBody`. */
  readonly payload: Buffer;
}

/** Reads a zig-zag varint (protobuf sint32); throws WireFormatError when the bytes end mid-varint. */
function readZigZag(bytes: Buffer, at: number): { value: number; next: number } {
  let result = 0;
  let shift = 0;
  let i = at;
  for (;;) {
    if (i >= bytes.length) throw new WireFormatError("truncated varint in the Confluent message indexes");
    if (shift > 28) throw new WireFormatError("varint longer than 5 bytes in the Confluent message indexes");
    const b = bytes[i++]!;
    result |= (b & 0x7f) << shift;
    shift += 7;
    if ((b & 0x80) === 0) break;
  }
  const unsigned = result >>> 0;
  return { value: (unsigned >>> 1) ^ -(unsigned & 1), next: i };
}

function writeZigZag(n: number, out: number[]): void {
  let v = ((n << 1) ^ (n >> 31)) >>> 0;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
}

/** Reads Confluent message indexes at `at`: `[0]` for a single 0 byte, else the count and the indexes. */
export function readMessageIndexes(bytes: Buffer, at: number): { indexes: number[]; next: number } {
  const count = readZigZag(bytes, at);
  if (count.value < 0 || count.value > 100) {
    throw new WireFormatError(`message index count ${count.value} is not plausible`);
  }
  if (count.value === 0) return { indexes: [0], next: count.next };
  const indexes: number[] = [];
  let next = count.next;
  for (let k = 0; k < count.value; k++) {
    const r = readZigZag(bytes, next);
    if (r.value < 0) throw new WireFormatError(`message index ${r.value} is negative`);
    indexes.push(r.value);
    next = r.next;
  }
  return { indexes, next };
}

/**
 * Reads one unsigned varint: the message index a Glue-framed Protobuf payload starts with (what
 * Powertools skips once the trigger has stripped the Glue header).
 */
export function readUnsignedVarint(bytes: Buffer, at: number): { value: number; next: number } {
  let value = 0;
  for (let i = at, shift = 0; i < bytes.length && i < at + 5; i++, shift += 7) {
    value |= (bytes[i]! & 0x7f) << shift;
    if ((bytes[i]! & 0x80) === 0) return { value: value >>> 0, next: i + 1 };
  }
  throw new WireFormatError("truncated varint at the start of the Protobuf payload");
}

export function writeUnsignedVarint(n: number): Buffer {
  const out: number[] = [];
  let v = n >>> 0;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

/** Parses Confluent framing. `protobuf` says whether message indexes follow the id. */
export function readConfluentFrame(bytes: Buffer, options: { protobuf?: boolean } = {}): ConfluentFrame {
  if (bytes.length < 5) {
    throw new WireFormatError(
      `${bytes.length} bytes: too short for Confluent framing (magic byte + 4-byte id)`,
    );
  }
  if (bytes[0] !== CONFLUENT_MAGIC) {
    throw new WireFormatError(`magic byte is ${bytes[0]}, expected 0 (Confluent framing)`);
  }
  const schemaId = bytes.readInt32BE(1);
  if (!options.protobuf) return { schemaId, messageIndexes: undefined, payload: bytes.subarray(5) };
  const { indexes, next } = readMessageIndexes(bytes, 5);
  return { schemaId, messageIndexes: indexes, payload: bytes.subarray(next) };
}

/** Confluent framing for `payload` (message indexes only for Protobuf). */
export function writeConfluentFrame(
  schemaId: number,
  payload: Uint8Array,
  messageIndexes?: readonly number[],
): Buffer {
  const head = Buffer.alloc(5);
  head[0] = CONFLUENT_MAGIC;
  head.writeInt32BE(schemaId, 1);
  if (messageIndexes === undefined) return Buffer.concat([head, payload]);
  const idx: number[] = [];
  if (messageIndexes.length === 1 && messageIndexes[0] === 0) idx.push(0);
  else {
    writeZigZag(messageIndexes.length, idx);
    for (const i of messageIndexes) writeZigZag(i, idx);
  }
  return Buffer.concat([head, Buffer.from(idx), payload]);
}

const hex = (b: Buffer) => b.toString("hex");
function uuidOf(b: Buffer): string {
  const h = hex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
function uuidBytes(id: string): Buffer {
  const h = id.replace(/-/g, "");
  if (!/^[0-9a-fA-F]{32}$/.test(h)) throw new TypeError(`'${id}' is not a UUID`);
  return Buffer.from(h, "hex");
}

/** Parses Glue framing. */
export function readGlueFrame(bytes: Buffer): GlueFrame {
  if (bytes.length < 18) {
    throw new WireFormatError(
      `${bytes.length} bytes: too short for Glue framing (2 header bytes + 16-byte UUID)`,
    );
  }
  if (bytes[0] !== GLUE_HEADER_VERSION) {
    throw new WireFormatError(
      `header version byte is ${bytes[0]}, expected 3 (Glue Schema Registry framing)`,
    );
  }
  const c = bytes[1];
  if (c !== GLUE_COMPRESSION.none && c !== GLUE_COMPRESSION.zlib) {
    throw new WireFormatError(`compression byte is ${c}, expected 0 (none) or 5 (zlib)`);
  }
  return {
    schemaVersionId: uuidOf(bytes.subarray(2, 18)),
    compression: c === GLUE_COMPRESSION.zlib ? "zlib" : "none",
    payload: bytes.subarray(18),
  };
}

/** Glue framing for `payload` (uncompressed). */
export function writeGlueFrame(schemaVersionId: string, payload: Uint8Array): Buffer {
  return Buffer.concat([
    Buffer.from([GLUE_HEADER_VERSION, GLUE_COMPRESSION.none]),
    uuidBytes(schemaVersionId),
    payload,
  ]);
}
