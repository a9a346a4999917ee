import { Ajv } from "ajv";
import avsc from "avsc";
import type protobufjs from "protobufjs";
import { UnencodableValueError } from "./errors.ts";
import type { SchemaFormat, SchemaRegistry } from "./registry.ts";
import { createPromiseCache } from "./schemaCache.ts";
import { type Framing, writeConfluentFrame, writeGlueFrame, writeUnsignedVarint } from "./wireFormat.ts";

/**
 * The producing side: serialize a value and frame it with the registry's id for its schema, as the
 * registries' own serializers do, so consumers (ours, Powertools', Java's) read it like any other
 * record. Used by the outbox relay for events that declare a schema.
 */
export interface PayloadEncoder {
  /** The schema's format: `AVRO`, `PROTOBUF` or `JSON`. */
  readonly format: SchemaFormat;
  /**
   * The value serialized and framed with its schema's registry id. Throws UnencodableValueError
   * (permanent) when the value does not fit the schema, UnknownSchemaError when the registry has no
   * id for it, SchemaRegistryUnavailableError (transient) when the registry cannot answer.
   */
  encode(value: unknown): Promise<Buffer>;
}

/** Where an encoder's schema is registered: the registry and the subject (or Glue schema name). */
export interface EncoderTarget {
  /** The registry whose id frames the bytes (Confluent or Glue framing follows its `kind`). */
  readonly registry: SchemaRegistry;
  /** Confluent subject (`<topic>-value` by the default strategy) or Glue schema name. */
  readonly subject: string;
  /** Register the schema when the registry does not have it (else only look it up). @default false */
  readonly register?: boolean;
}

function framed(
  target: EncoderTarget,
  format: SchemaFormat,
  definition: string,
  messageIndexes?: readonly number[],
) {
  const framing: Framing = target.registry.kind;
  const id = createPromiseCache((_: "id") =>
    target.registry.idFor(
      { subject: target.subject, format, definition },
      { register: target.register ?? false },
    ),
  );
  return async (payload: Uint8Array): Promise<Buffer> => {
    const schemaId = await id.get("id");
    if (framing === "confluent") {
      return writeConfluentFrame(
        Number(schemaId),
        payload,
        format === "PROTOBUF" ? (messageIndexes ?? [0]) : undefined,
      );
    }
    // Glue's Protobuf payload starts with the message's index as one varint.
    return writeGlueFrame(
      schemaId,
      format === "PROTOBUF"
        ? Buffer.concat([writeUnsignedVarint(messageIndexes?.[0] ?? 0), payload])
        : payload,
    );
  };
}

/** An encoder of values to Avro with `schema`, framed for the target's registry. */
export function avroEncoder(
  target: EncoderTarget & { readonly schema: avsc.Schema | Record<string, unknown> },
): PayloadEncoder {
  const type = avsc.Type.forSchema(target.schema as avsc.Schema);
  const frame = framed(target, "AVRO", JSON.stringify(target.schema));
  return {
    format: "AVRO",
    async encode(value) {
      const errors: string[] = [];
      if (!type.isValid(value, { errorHook: (path) => errors.push(path.join(".") || "(root)") })) {
        throw new UnencodableValueError(
          `value does not fit Avro ${type.name ?? type.typeName} at ${errors.join(", ")}`,
        );
      }
      return frame(type.toBuffer(value));
    },
  };
}

/** An encoder of values to Protobuf as `type`, framed for the target's registry. */
export function protobufEncoder(
  target: EncoderTarget & {
    /** The message type to write. */
    readonly type: protobufjs.Type;
    /** The .proto text registered for it. */
    readonly definition: string;
    /** Confluent message indexes of `type` in `definition`. @default [0] (the first message) */
    readonly messageIndexes?: readonly number[];
  },
): PayloadEncoder {
  const frame = framed(target, "PROTOBUF", target.definition, target.messageIndexes);
  return {
    format: "PROTOBUF",
    async encode(value) {
      const problem = target.type.verify(value as Record<string, unknown>);
      if (problem) throw new UnencodableValueError(`value does not fit ${target.type.name}: ${problem}`);
      return frame(target.type.encode(target.type.fromObject(value as Record<string, unknown>)).finish());
    },
  };
}

/**
 * An encoder of values to JSON text, checked against the JSON Schema `schema` and framed for the target's
 * registry.
 */
export function jsonSchemaEncoder(target: EncoderTarget & { readonly schema: object }): PayloadEncoder {
  const validate = new Ajv({ strict: false, allErrors: true }).compile(target.schema);
  const frame = framed(target, "JSON", JSON.stringify(target.schema));
  return {
    format: "JSON",
    async encode(value) {
      if (!validate(value)) {
        throw new UnencodableValueError(
          `value does not match the JSON Schema: ${(validate.errors ?? []).map((e) => `${e.instancePath || "(root)"} ${e.message}`).join("; ")}`,
        );
      }
      return frame(Buffer.from(JSON.stringify(value)));
    },
  };
}
