/**
 * Reading a stream record's body, the same for both stream consumers: the Standard Schema check
 * and the business key, each a typed permanent error when it fails (the record is parked).
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { MissingIdError, SchemaValidationError } from "../core/errors.ts";

/** The body checked by `schema` (its output, which may be transformed); `what` names it in the error. */
export async function validateBody<T>(
  schema: StandardSchemaV1<unknown, T> | undefined,
  body: unknown,
  what: string,
): Promise<T> {
  if (!schema) return body as T;
  let result = schema["~standard"].validate(body);
  if (result instanceof Promise) result = await result;
  if (result.issues) {
    const summary = result.issues
      .slice(0, 5)
      .map((i) => {
        const path = (i.path ?? []).map((p) => (typeof p === "object" ? String(p.key) : String(p))).join(".");
        return `${path || "(root)"}: ${i.message}`;
      })
      .join("; ");
    throw new SchemaValidationError(`${what} does not match the schema: ${summary}`, result.issues);
  }
  return result.value;
}

/** The user's business key of a record; MissingIdError when the function gives none. */
export function businessKeyOf<T, R>(
  key: ((body: T, record: R) => string | undefined) | undefined,
  body: T,
  record: R,
): string | undefined {
  if (!key) return undefined;
  const id = key(body, record);
  if (id === undefined || id === "")
    throw new MissingIdError("the key function returned no business key for this record");
  return id;
}
