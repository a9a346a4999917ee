import type { PayloadEncoder } from "./encoders.ts";

/**
 * Registry-framed outbox events. An event declares its schema by name in this header
 * (`uow.publish({ …, headers: { [OUTBOX_SCHEMA_HEADER]: "payment-captured" } })`); the publisher,
 * given `schemas: { "payment-captured": avroEncoder({ registry, subject, schema }) }`, serializes the
 * JSON payload with it and frames it with the registry's id, registering the schema first only when
 * the encoder allows it. The header travels with the record, so a consumer can see what it was.
 */
export const OUTBOX_SCHEMA_HEADER = "x-schema";

export type EncodedValue =
  | { readonly ok: true; readonly value: Buffer | string }
  | { readonly ok: false; readonly error: unknown };

/** Encodes each payload whose event names a schema; others pass through as they are. */
export async function encodeOutboxPayloads(
  events: ReadonlyArray<{ readonly payload: string; readonly headers: Readonly<Record<string, string>> }>,
  schemas: Readonly<Record<string, PayloadEncoder>> | undefined,
): Promise<EncodedValue[]> {
  return Promise.all(
    events.map(async (e): Promise<EncodedValue> => {
      const name = e.headers[OUTBOX_SCHEMA_HEADER];
      if (name === undefined) return { ok: true, value: e.payload };
      const encoder = schemas?.[name];
      if (!encoder) {
        const { UnencodableValueError } = await import("./errors.ts");
        return {
          ok: false,
          error: new UnencodableValueError(`event names schema '${name}', which the publisher does not have`),
        };
      }
      try {
        return { ok: true, value: await encoder.encode(JSON.parse(e.payload)) };
      } catch (error) {
        if (error instanceof SyntaxError) {
          const { UnencodableValueError } = await import("./errors.ts");
          return { ok: false, error: new UnencodableValueError(`payload is not JSON: ${error.message}`) };
        }
        return { ok: false, error };
      }
    }),
  );
}
