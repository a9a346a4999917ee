import { inflateSync } from "node:zlib";
import { UndecodableRecordError } from "./errors.ts";
import type { SchemaFormat, SchemaRegistry } from "./registry.ts";
import {
  type Framing,
  readConfluentFrame,
  readGlueFrame,
  readMessageIndexes,
  readUnsignedVarint,
} from "./wireFormat.ts";

/**
 * A decoder for a Kafka key or value: `avro(…)`, `protobuf(…)` or `jsonSchema(…)`, passed to the
 * consumer as `parse` (the value) or `parseKey`. Created once per container (module scope): it
 * caches the writer schemas it fetched, by id.
 */
export interface PayloadDecoder<T = unknown> {
  /** The format it decodes: `AVRO`, `PROTOBUF` or `JSON`. */
  readonly format: SchemaFormat;
  /** Where the schema comes from: the record's framing or a local schema. */
  readonly framing: Framing;
  /**
   * Decodes the bytes of a key or value. `framing: "none"` overrides the decoder's framing for
   * bytes whose framing was stripped (the MSK trigger's `SOURCE` event record format).
   * Throws WireFormatError, UnknownSchemaError, UndecodableRecordError (permanent) or
   * SchemaRegistryUnavailableError (transient).
   */
  decode(bytes: Buffer, options?: DecodeOptions): Promise<T>;
}

export interface DecodeOptions {
  /** Overrides the decoder's framing: `none` for bytes the trigger's `SOURCE` format unframed. */
  readonly framing?: Framing;
  /**
   * The writer's schema id when it is known from elsewhere: the trigger's `SOURCE` format removes
   * the framing and says the id in the record's `valueSchemaMetadata` / `keySchemaMetadata`. With a
   * registry the writer schema is then fetched by it, so evolution works under SOURCE too.
   */
  readonly schemaId?: string;
}

export interface DecoderSource {
  /** Where writer schemas come from, by the id in the framing. */
  readonly registry?: SchemaRegistry;
  /**
   * How the bytes are framed. @default the registry's framing (`confluent` or `glue`), else `none`
   * (plain Avro / Protobuf / JSON bytes, decoded with the local schema)
   */
  readonly framing?: Framing;
}

export interface Unframed {
  /** The id in the framing; undefined for unframed bytes. */
  readonly schemaId: string | undefined;
  readonly messageIndexes: readonly number[] | undefined;
  readonly payload: Buffer;
}

export function framingOf(source: DecoderSource): Framing {
  return source.framing ?? source.registry?.kind ?? "none";
}

/**
 * Strips the framing; Glue's zlib payloads are inflated. Unframed Protobuf bytes with a schema id
 * from the trigger still start with what the trigger leaves of the framing, as Powertools reads
 * them: Confluent's message indexes (a numeric id), or one varint (a Glue UUID).
 */
export function unframe(bytes: Buffer, framing: Framing, protobuf: boolean, schemaId?: string): Unframed {
  if (framing === "confluent") {
    const f = readConfluentFrame(bytes, { protobuf });
    return { schemaId: String(f.schemaId), messageIndexes: f.messageIndexes, payload: f.payload };
  }
  if (framing === "glue") {
    const f = readGlueFrame(bytes);
    let payload = f.payload;
    if (f.compression === "zlib") {
      try {
        payload = inflateSync(payload);
      } catch (error) {
        throw new UndecodableRecordError(
          `Glue payload is marked zlib but does not inflate: ${(error as Error).message}`,
        );
      }
    }
    if (!protobuf) return { schemaId: f.schemaVersionId, messageIndexes: undefined, payload };
    const index = readUnsignedVarint(payload, 0);
    return {
      schemaId: f.schemaVersionId,
      messageIndexes: [index.value],
      payload: payload.subarray(index.next),
    };
  }
  if (schemaId === undefined) return { schemaId: undefined, messageIndexes: undefined, payload: bytes };
  if (!protobuf) return { schemaId, messageIndexes: undefined, payload: bytes };
  if (/^\d+$/.test(schemaId)) {
    const { indexes, next } = readMessageIndexes(bytes, 0);
    return { schemaId, messageIndexes: indexes, payload: bytes.subarray(next) };
  }
  const index = readUnsignedVarint(bytes, 0);
  return { schemaId, messageIndexes: [index.value], payload: bytes.subarray(index.next) };
}

/** A decoder's configuration problem, found when it is made (not per record). */
export function requireSchemaSource(what: string, local: unknown, source: DecoderSource): void {
  if (local === undefined && !source.registry) {
    throw new TypeError(`${what}: give a local schema, a registry, or both`);
  }
  if (local === undefined && framingOf(source) === "none") {
    throw new TypeError(`${what}: unframed bytes need a local schema`);
  }
}
