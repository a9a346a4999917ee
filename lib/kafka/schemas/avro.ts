import avsc from "avsc";
import { SchemaFormatMismatchError, UndecodableRecordError } from "./errors.ts";
import {
  type DecoderSource,
  framingOf,
  type PayloadDecoder,
  requireSchemaSource,
  unframe,
} from "./payloadDecoder.ts";
import { createPromiseCache } from "./schemaCache.ts";

export interface AvroDecoderOptions extends DecoderSource {
  /**
   * The reader's schema (Avro JSON, as an object or text): what your code expects. With a registry,
   * records written with another compatible schema are resolved into it by Avro's schema
   * resolution (fields added with defaults, fields removed, promoted types, aliases). Without a
   * registry it is also the writer's schema.
   */
  readonly schema?: avsc.Schema | Record<string, unknown> | string;
}

type Decode = (payload: Buffer) => unknown;

/**
 * avsc decodes a record into an instance of a generated class whose prototype carries `clone`,
 * `compare`, `isValid`, `toBuffer`, `toString`, `wrap` and `wrapped` as enumerable methods, so
 * `for…in` (how a strict Standard Schema such as zod's `.strict()` looks for unknown keys) sees them
 * as keys, and a valid record is rejected as "Unrecognized keys" and dead-lettered. avsc 5.7 has no
 * option to decode into plain objects, so the value is copied into plain data here, once, in the
 * shape JSON gives: records and maps are plain objects (own fields only), arrays are arrays,
 * `bytes` and `fixed` stay Buffers, enums are their symbol strings, `long` is a number (a value
 * beyond ±2^53 − 1 is refused by avsc as a precision loss), a union is its value (or, where avsc
 * must tell branches apart, `{ "<type name>": value }`, Avro's JSON encoding of a union).
 */
function plain(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Buffer.isBuffer(value)) return value;
  if (Array.isArray(value)) return value.map(plain);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = plain((value as Record<string, unknown>)[key]);
  return out;
}

const parseSchema = (s: avsc.Schema | Record<string, unknown> | string): avsc.Type =>
  avsc.Type.forSchema((typeof s === "string" ? JSON.parse(s) : s) as avsc.Schema);

function decodeWith(type: avsc.Type, resolver?: ReturnType<avsc.Type["createResolver"]>): Decode {
  return (payload) => {
    try {
      return plain(resolver ? type.fromBuffer(payload, resolver) : type.fromBuffer(payload));
    } catch (error) {
      throw new UndecodableRecordError(
        `bytes do not decode as Avro ${type.name ?? type.typeName}: ${(error as Error).message}`,
      );
    }
  };
}

/** Avro values or keys, framed for a registry or plain. */
export function avro<T = unknown>(options: AvroDecoderOptions = {}): PayloadDecoder<T> {
  requireSchemaSource("avro()", options.schema, options);
  const framing = framingOf(options);
  const reader = options.schema === undefined ? undefined : parseSchema(options.schema);
  const local: Decode | undefined = reader ? decodeWith(reader) : undefined;
  const registry = options.registry;
  // Per writer id: the writer's type, resolved into the reader's once (avsc's resolvers are reusable).
  const byId = createPromiseCache(async (id: string): Promise<Decode> => {
    const writerSchema = await registry!.fetchSchema(id);
    if (writerSchema.format !== "AVRO") {
      throw new SchemaFormatMismatchError(`schema ${id} is ${writerSchema.format}, not AVRO`);
    }
    let writer: avsc.Type;
    try {
      writer = parseSchema(writerSchema.definition);
    } catch (error) {
      throw new UndecodableRecordError(
        `schema ${id} is not a valid Avro schema: ${(error as Error).message}`,
      );
    }
    if (!reader) return decodeWith(writer);
    try {
      return decodeWith(reader, reader.createResolver(writer));
    } catch (error) {
      throw new UndecodableRecordError(
        `writer schema ${id} cannot be resolved into the reader's schema: ${(error as Error).message}`,
      );
    }
  });
  return {
    format: "AVRO",
    framing,
    async decode(bytes, over) {
      const f = unframe(bytes, over?.framing ?? framing, false, over?.schemaId);
      if (f.schemaId === undefined || !registry) {
        if (!local) throw new UndecodableRecordError("no local Avro schema for unframed bytes");
        return local(f.payload) as T;
      }
      return (await byId.get(f.schemaId))(f.payload) as T;
    },
  };
}
