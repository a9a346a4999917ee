import { Ajv, type ValidateFunction } from "ajv";
import { SchemaValidationError } from "../../core/errors.ts";
import { SchemaFormatMismatchError, UndecodableRecordError } from "./errors.ts";
import {
  type DecoderSource,
  framingOf,
  type PayloadDecoder,
  requireSchemaSource,
  unframe,
} from "./payloadDecoder.ts";
import { createPromiseCache } from "./schemaCache.ts";

export interface JsonSchemaDecoderOptions extends DecoderSource {
  /**
   * The reader's JSON Schema. Values are checked against it when given, else against the writer's
   * schema from the registry. (JSON has no schema resolution: a value is valid or it is not.)
   */
  readonly schema?: object;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** JSON values or keys framed for a registry's JSON Schema serializer (or plain), validated. */
export function jsonSchema<T = unknown>(options: JsonSchemaDecoderOptions = {}): PayloadDecoder<T> {
  requireSchemaSource("jsonSchema()", options.schema, options);
  const framing = framingOf(options);
  const registry = options.registry;
  // strict: false, since registries hold schemas with keywords ajv does not know (title, $id forms).
  const ajv = new Ajv({ strict: false, allErrors: true });
  const compile = (schema: object, what: string): ValidateFunction => {
    try {
      return ajv.compile(schema);
    } catch (error) {
      throw new UndecodableRecordError(`${what} is not a usable JSON Schema: ${(error as Error).message}`);
    }
  };
  const local = options.schema ? compile(options.schema, "the local schema") : undefined;
  const byId = createPromiseCache(async (id: string) => {
    const s = await registry!.fetchSchema(id);
    if (s.format !== "JSON") throw new SchemaFormatMismatchError(`schema ${id} is ${s.format}, not JSON`);
    let parsed: object;
    try {
      parsed = JSON.parse(s.definition) as object;
    } catch (error) {
      throw new UndecodableRecordError(`schema ${id} is not JSON: ${(error as Error).message}`);
    }
    return compile(parsed, `schema ${id}`);
  });
  return {
    format: "JSON",
    framing,
    async decode(bytes, over) {
      const f = unframe(bytes, over?.framing ?? framing, false, over?.schemaId);
      let value: unknown;
      try {
        value = JSON.parse(utf8.decode(f.payload));
      } catch (error) {
        throw new UndecodableRecordError(`bytes are not JSON text: ${(error as Error).message}`);
      }
      const validate =
        local ?? (f.schemaId !== undefined && registry ? await byId.get(f.schemaId) : undefined);
      if (!validate) throw new UndecodableRecordError("no JSON Schema for unframed bytes");
      if (!validate(value)) {
        const issues = (validate.errors ?? []).map((e) => ({
          message: `${e.message ?? "invalid"}`,
          path: e.instancePath.split("/").filter(Boolean),
        }));
        throw new SchemaValidationError(
          `value does not match the JSON Schema: ${issues
            .slice(0, 5)
            .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
            .join("; ")}`,
          issues,
        );
      }
      return value as T;
    },
  };
}
