import protobufjs from "protobufjs";
import descriptor from "protobufjs/ext/descriptor/index.js";
import { SchemaFormatMismatchError, UndecodableRecordError } from "./errors.ts";
import {
  type DecoderSource,
  framingOf,
  type PayloadDecoder,
  requireSchemaSource,
  unframe,
} from "./payloadDecoder.ts";
import { createPromiseCache } from "./schemaCache.ts";

export interface ProtobufDecoderOptions extends DecoderSource {
  /**
   * The reader's message type (a protobufjs `Type`, from your .proto or generated code). Protobuf's
   * evolution is by field number: a record written with an older or newer version of the message
   * decodes into this type (unknown fields are skipped, missing ones take their defaults), so with
   * a reader type the writer schema is not fetched; the framing (id, message indexes) is still
   * checked.
   */
  readonly type?: protobufjs.Type;
  /**
   * Without a reader type: the fully qualified message name to decode Glue-framed or unframed
   * bytes as. Confluent framing names the message by its indexes. @default the first message
   */
  readonly messageName?: string;
  /**
   * protobufjs `toObject` options: how a message becomes plain data. Other options can produce
   * values that are not plain (`longs: undefined` gives `Long` instances).
   * @default { longs: String, enums: String, bytes: Buffer, defaults: true } (the forms below)
   */
  readonly toObject?: protobufjs.IConversionOptions;
}

/**
 * A decoded message is plain data (objects with `Object.prototype`, arrays, strings, numbers,
 * booleans, Buffers, null), so any Standard Schema, a strict one included, checks it as it would
 * JSON. The forms:
 * - 64-bit integers (`int64`, `uint64`, `sint64`, `fixed64`, `sfixed64`): decimal strings, lossless
 *   (`"9223372036854775807"`); 32-bit ones and floats are numbers (NaN and ±Infinity included);
 * - `bytes`: Buffers (an empty Buffer when unset);
 * - enums: the value's name (`"CARD"`); a number the reader's enum does not know stays a number;
 * - a message field that is unset: `null`; repeated fields: arrays (`[]` when empty); maps: plain
 *   objects; a `oneof`: only its set member is present;
 * - unset scalars take their proto3 defaults (`""`, `0`, `false`, `"0"` for 64-bit integers, the
 *   enum's first name); field names are as written in the .proto (`keepCase`).
 */
const TO_OBJECT: protobufjs.IConversionOptions = Object.freeze({
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: true,
});

function messagesOf(ns: protobufjs.NamespaceBase): protobufjs.Type[] {
  return ns.nestedArray.filter((n): n is protobufjs.Type => n instanceof protobufjs.Type);
}

/** The message a Confluent message-index path names, in declaration order, nested level by level (also used by reframe.ts). */
export function messageAt(file: protobufjs.IParserResult, indexes: readonly number[]): protobufjs.Type {
  const top = file.package ? file.root.lookup(file.package) : file.root;
  if (!(top instanceof protobufjs.Namespace)) throw new UndecodableRecordError("the .proto has no messages");
  let level: protobufjs.NamespaceBase = top;
  let found: protobufjs.Type | undefined;
  for (const i of indexes) {
    found = messagesOf(level)[i];
    if (!found)
      throw new UndecodableRecordError(`message index path [${indexes.join(", ")}] names no message`);
    level = found;
  }
  if (!found) throw new UndecodableRecordError("empty message index path");
  return found;
}

/**
 * A registry's Protobuf schema: `.proto` text (what Confluent Schema Registry answers by default),
 * or a base64 FileDescriptorProto (its `serialized` format, which Confluent's JavaScript serializer
 * registers and a plain store hands back as it got it).
 */
export function parseProto(text: string, id: string): protobufjs.IParserResult {
  try {
    return protobufjs.parse(text, { keepCase: true });
  } catch (error) {
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(text.trim())) {
      try {
        // protobufjs's descriptor extension; its .d.ts does not declare the generated message types.
        const { FileDescriptorProto } = descriptor as unknown as {
          FileDescriptorProto: { decode(bytes: Uint8Array): { package?: string } };
        };
        const file = FileDescriptorProto.decode(Buffer.from(text, "base64"));
        const root = (
          protobufjs.Root as unknown as { fromDescriptor(d: unknown): protobufjs.Root }
        ).fromDescriptor({
          file: [file],
        });
        const pkg = file.package;
        return { root, ...(pkg ? { package: pkg } : {}) } as protobufjs.IParserResult;
      } catch {
        // not a descriptor either: report the text's error
      }
    }
    throw new UndecodableRecordError(`schema ${id} is not a valid .proto: ${(error as Error).message}`);
  }
}

/** Protobuf values or keys, framed for a registry or plain. */
export function protobuf<T = unknown>(options: ProtobufDecoderOptions = {}): PayloadDecoder<T> {
  requireSchemaSource("protobuf()", options.type, options);
  const framing = framingOf(options);
  const toObject = options.toObject ?? TO_OBJECT;
  const registry = options.registry;
  const decodeAs = (type: protobufjs.Type, payload: Buffer): T => {
    try {
      return type.toObject(type.decode(payload), toObject) as T;
    } catch (error) {
      throw new UndecodableRecordError(
        `bytes do not decode as ${type.fullName.replace(/^\./, "")}: ${(error as Error).message}`,
      );
    }
  };
  const files = createPromiseCache(async (id: string) => {
    const s = await registry!.fetchSchema(id);
    if (s.format !== "PROTOBUF")
      throw new SchemaFormatMismatchError(`schema ${id} is ${s.format}, not PROTOBUF`);
    return parseProto(s.definition, id);
  });
  const byName = (file: protobufjs.IParserResult): protobufjs.Type => {
    if (options.messageName) return file.root.lookupType(options.messageName);
    return messageAt(file, [0]);
  };
  return {
    format: "PROTOBUF",
    framing,
    async decode(bytes, over) {
      const f = unframe(bytes, over?.framing ?? framing, true, over?.schemaId);
      if (options.type) return decodeAs(options.type, f.payload);
      if (f.schemaId === undefined || !registry)
        throw new UndecodableRecordError("no Protobuf type for unframed bytes");
      const file = await files.get(f.schemaId);
      // Confluent's indexes are a path; Glue's one index is taken as the top-level message's.
      const type =
        options.messageName || !f.messageIndexes ? byName(file) : messageAt(file, f.messageIndexes);
      return decodeAs(type, f.payload);
    },
  };
}
