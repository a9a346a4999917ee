/**
 * A part a registry mapping handed over decoded (lambdaDecoded.ts), framed again for a reader that
 * reads framed bytes: the main topic's mapping, when a dead letter is replayed there.
 *
 * - `SOURCE`: the bytes are the source bytes without the framing, so the framing is put back with
 *   the id: Confluent's magic byte and 4-byte id (a Protobuf part still starts with its message
 *   indexes, which SOURCE leaves in place), or Glue's header and version UUID (uncompressed; a
 *   Protobuf part still starts with its message index). No registry call; the Confluent bytes are
 *   the original ones again.
 * - `JSON`: the bytes are JSON text of the deserialized part, so it is encoded again with the
 *   writer's schema, fetched by the id: Avro (avsc: the JSON's values cloned into the schema's types,
 *   bytes as `{"type":"Buffer","data":[…]}` or a union as its branch where avsc must tell branches
 *   apart, as the consumer's own decoders render them), Protobuf (the schema's first message: JSON
 *   does not say which message of the `.proto` it was; give SOURCE to keep another), or JSON Schema
 *   (the text itself). A value the schema does not take is `UnencodableValueError`.
 */
import avsc from "avsc";
import type { LambdaDecodedPart } from "./lambdaDecoded.ts";
import { UnencodableValueError } from "./schemas/errors.ts";
import { messageAt, parseProto } from "./schemas/protobuf.ts";
import type { RegistrySchema, SchemaRegistry } from "./schemas/registry.ts";
import { writeConfluentFrame, writeGlueFrame, writeUnsignedVarint } from "./schemas/wireFormat.ts";

/** Which registry a schema id is of: Confluent's are numbers, Glue's schema version UUIDs. */
export function registryKindOf(schemaId: string): "confluent" | "glue" | undefined {
  if (/^\d+$/.test(schemaId)) return "confluent";
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(schemaId)) return "glue";
  return undefined;
}

/** The registry client to fetch a kind's writer schemas from (a replay's, made once). */
export type RegistryFor = (kind: "confluent" | "glue") => SchemaRegistry | undefined;

/** `JSON.stringify(buffer)`'s form back to a Buffer (how the decoders' bytes values travel as JSON). */
const bufferReviver = (_key: string, v: unknown): unknown =>
  typeof v === "object" &&
  v !== null &&
  (v as { type?: unknown }).type === "Buffer" &&
  Array.isArray((v as { data?: unknown }).data)
    ? Buffer.from((v as { data: number[] }).data)
    : v;

function encodeJson(schema: RegistrySchema, text: string): { payload: Buffer; protobuf: boolean } {
  const fail = (error: unknown): never => {
    throw new UnencodableValueError(
      `the JSON does not encode as ${schema.format} schema ${schema.id}: ${(error as Error).message}`,
    );
  };
  if (schema.format === "JSON") return { payload: Buffer.from(text, "utf8"), protobuf: false };
  try {
    if (schema.format === "AVRO") {
      const type = avsc.Type.forSchema(JSON.parse(schema.definition) as avsc.Schema);
      const value = type.clone(JSON.parse(text), { coerceBuffers: true });
      return { payload: type.toBuffer(value), protobuf: false };
    }
    const type = messageAt(parseProto(schema.definition, schema.id), [0]);
    const message = type.fromObject(JSON.parse(text, bufferReviver) as Record<string, unknown>);
    return { payload: Buffer.from(type.encode(message).finish()), protobuf: true };
  } catch (error) {
    return fail(error);
  }
}

/** `bytes` (a part as `part` says the mapping handed it over) framed with its schema id again. */
export async function reframePart(
  bytes: Buffer,
  part: LambdaDecodedPart,
  registryFor: RegistryFor,
): Promise<Buffer> {
  const id = part.schemaId;
  const kind = id === undefined ? undefined : registryKindOf(id);
  if (id === undefined || kind === undefined)
    throw new UnencodableValueError(`no usable schema id (${id ?? "none"}) to frame the part with again`);
  const frame = (payload: Buffer, protobuf: boolean): Buffer =>
    kind === "confluent"
      ? writeConfluentFrame(Number(id), payload, protobuf ? [0] : undefined)
      : writeGlueFrame(id, protobuf ? Buffer.concat([writeUnsignedVarint(0), payload]) : payload);
  // SOURCE left a Protobuf part's message indexes (or index) in place: only the head goes back.
  if (part.recordFormat === "SOURCE") return frame(bytes, false);
  const registry = registryFor(kind);
  if (!registry)
    throw new UnencodableValueError(
      `a ${kind} schema registry is needed to encode the JSON of schema ${id} again (configure its client)`,
    );
  const encoded = encodeJson(await registry.fetchSchema(id), bytes.toString("utf8"));
  return frame(encoded.payload, encoded.protobuf);
}
