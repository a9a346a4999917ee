/**
 * Kafka's classic (non-flexible) wire encoding, described by data: a message is a list of fields,
 * each with the versions it exists in, the way Kafka's own JSON message specs describe them. One
 * reader and one writer serve every message the gateway needs (kafkaMessages.ts). Pure.
 */

export type Primitive =
  | "int8"
  | "int16"
  | "int32"
  | "int64"
  | "bool"
  | "string"
  | "nstring"
  | "bytes"
  | "nbytes";

export interface Field {
  readonly name: string;
  readonly type: Primitive | { readonly array: Primitive | readonly Field[]; readonly nullable?: boolean };
  /** First version with the field. @default 0 */
  readonly from?: number;
  /** Last version with the field. @default every later one */
  readonly to?: number;
}

export type Schema = readonly Field[];
export type Message = Record<string, unknown>;

const present = (f: Field, version: number) => version >= (f.from ?? 0) && version <= (f.to ?? Infinity);

export class WireReader {
  offset = 0;
  readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  /** Moves past `n` bytes; returns where they started. */
  #take(n: number): number {
    const at = this.offset;
    this.offset += n;
    return at;
  }
  int8 = () => this.buf.readInt8(this.#take(1));
  int16 = () => this.buf.readInt16BE(this.#take(2));
  int32 = () => this.buf.readInt32BE(this.#take(4));
  int64 = () => this.buf.readBigInt64BE(this.#take(8));
  nstring(): string | null {
    const n = this.int16();
    if (n < 0) return null;
    const at = this.#take(n);
    return this.buf.toString("utf8", at, at + n);
  }
  nbytes(): Buffer | null {
    const n = this.int32();
    if (n < 0) return null;
    const at = this.#take(n);
    return this.buf.subarray(at, at + n);
  }
}

export class WireWriter {
  readonly #chunks: Buffer[] = [];
  #put(size: number, write: (b: Buffer) => void) {
    const b = Buffer.alloc(size);
    write(b);
    this.#chunks.push(b);
    return this;
  }
  int8 = (v: number) => this.#put(1, (b) => b.writeInt8(v));
  int16 = (v: number) => this.#put(2, (b) => b.writeInt16BE(v));
  int32 = (v: number) => this.#put(4, (b) => b.writeInt32BE(v));
  int64 = (v: bigint) => this.#put(8, (b) => b.writeBigInt64BE(v));
  nstring(v: string | null) {
    if (v === null) return this.int16(-1);
    const s = Buffer.from(v, "utf8");
    this.int16(s.length);
    this.#chunks.push(s);
    return this;
  }
  nbytes(v: Buffer | null) {
    if (v === null) return this.int32(-1);
    this.int32(v.length);
    this.#chunks.push(v);
    return this;
  }
  raw(b: Buffer) {
    this.#chunks.push(b);
    return this;
  }
  toBuffer = () => Buffer.concat(this.#chunks);
}

function readPrimitive(r: WireReader, t: Primitive): unknown {
  switch (t) {
    case "int8":
      return r.int8();
    case "int16":
      return r.int16();
    case "int32":
      return r.int32();
    case "int64":
      return r.int64();
    case "bool":
      return r.int8() !== 0;
    case "string":
      return r.nstring() ?? "";
    case "nstring":
      return r.nstring();
    case "bytes":
      return r.nbytes() ?? Buffer.alloc(0);
    case "nbytes":
      return r.nbytes();
  }
}

function writePrimitive(w: WireWriter, t: Primitive, v: unknown): void {
  switch (t) {
    case "int8":
      w.int8(Number(v ?? 0));
      return;
    case "int16":
      w.int16(Number(v ?? 0));
      return;
    case "int32":
      w.int32(Number(v ?? 0));
      return;
    case "int64":
      w.int64(BigInt((v as bigint | number | undefined) ?? 0));
      return;
    case "bool":
      w.int8(v ? 1 : 0);
      return;
    case "string":
      w.nstring(String(v ?? ""));
      return;
    case "nstring":
      w.nstring((v as string | null | undefined) ?? null);
      return;
    case "bytes":
      w.nbytes((v as Buffer | undefined) ?? Buffer.alloc(0));
      return;
    case "nbytes":
      w.nbytes((v as Buffer | null | undefined) ?? null);
      return;
  }
}

export function decode(schema: Schema, version: number, r: WireReader): Message {
  const out: Message = {};
  for (const f of schema) {
    if (!present(f, version)) continue;
    if (typeof f.type === "string") {
      out[f.name] = readPrimitive(r, f.type);
      continue;
    }
    const n = r.int32();
    if (n < 0) {
      out[f.name] = null;
      continue;
    }
    const of = f.type.array;
    const items: unknown[] = [];
    for (let i = 0; i < n; i++)
      items.push(typeof of === "string" ? readPrimitive(r, of) : decode(of, version, r));
    out[f.name] = items;
  }
  return out;
}

export function encode(
  schema: Schema,
  version: number,
  message: Message,
  w: WireWriter = new WireWriter(),
): WireWriter {
  for (const f of schema) {
    if (!present(f, version)) continue;
    const v = message[f.name];
    if (typeof f.type === "string") {
      writePrimitive(w, f.type, v);
      continue;
    }
    if (v === null || v === undefined) {
      w.int32(f.type.nullable && v === null ? -1 : 0);
      continue;
    }
    const items = v as unknown[];
    w.int32(items.length);
    const of = f.type.array;
    for (const item of items)
      if (typeof of === "string") writePrimitive(w, of, item);
      else encode(of, version, item as Message, w);
  }
  return w;
}

/** The request header (v1, every non-flexible request): api key, version, correlation id, client id. */
export interface RequestHeader {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
}

export function readRequestHeader(r: WireReader): RequestHeader {
  return { apiKey: r.int16(), apiVersion: r.int16(), correlationId: r.int32(), clientId: r.nstring() };
}

/** A size-prefixed frame. */
export function frame(body: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

/** A response frame: size, correlation id (response header v0), body. */
export function responseFrame(correlationId: number, body: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeInt32BE(correlationId);
  return frame(Buffer.concat([head, body]));
}

/** Splits a byte stream into size-prefixed frames; keeps the partial tail for the next chunk. */
export function frameSplitter(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 4) {
      const size = pending.readInt32BE(0);
      if (pending.length < 4 + size) break;
      onFrame(pending.subarray(4, 4 + size));
      pending = pending.subarray(4 + size);
    }
  };
}
