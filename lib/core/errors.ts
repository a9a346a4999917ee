/**
 * The error taxonomy every adapter shares. `permanent` errors go to a dead-letter destination at
 * once (retrying them only blocks the line); `transient` ones are retried with backoff.
 */
export type ErrorKind = "permanent" | "transient";

export abstract class ConsumerError extends Error {
  abstract readonly kind: ErrorKind;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Throw from a handler for a failure that no retry can fix (a business rule, a bad reference). */
export class PermanentError extends ConsumerError {
  readonly kind = "permanent" as const;
}

/** Throw from a handler to say explicitly that a retry may succeed. Any unknown error counts as this too. */
export class TransientError extends ConsumerError {
  readonly kind = "transient" as const;
}

/** The body is not valid JSON. */
export class InvalidJsonError extends PermanentError {}

/** The body does not match the consumer's Standard Schema. `issues` lists what is wrong. */
export class SchemaValidationError extends PermanentError {
  readonly issues: ReadonlyArray<{
    message: string;
    path?: ReadonlyArray<PropertyKey | { key: PropertyKey }>;
  }>;
  constructor(message: string, issues: SchemaValidationError["issues"]) {
    super(message);
    this.issues = issues;
  }
}

/** No usable dedup key: the key function returned nothing and there is no fallback. */
export class MissingIdError extends PermanentError {}

/** A body, header or value is larger than the consumer accepts. */
export class PayloadTooLargeError extends PermanentError {}

/** Headers or key bytes that cannot be decoded. */
export class MalformedRecordError extends PermanentError {}

/** The same dedup key arrived with a different payload: two messages collide on one key. */
export class KeyReuseError extends PermanentError {}

/** The Lambda event is not of a shape this adapter understands. Thrown for the whole event. */
export class UnknownEventShapeError extends PermanentError {}

/** Another invocation holds the lease on this key right now; retry later. */
export class InProgressElsewhereError extends TransientError {}

/** Our lease was taken over (it expired and someone else claimed), so we may not complete. */
export class LeaseLostError extends TransientError {}

/** There was not enough Lambda time left to start this record. */
export class OutOfTimeError extends TransientError {}

/** Permanent if the error says so; everything unknown is treated as transient (retry, then DLQ). */
export function classifyError(error: unknown): ErrorKind {
  if (error instanceof ConsumerError) return error.kind;
  if (typeof error === "object" && error !== null && (error as { kind?: unknown }).kind === "permanent") {
    return "permanent";
  }
  return "transient";
}

/** `{ type, message }`, bounded, for dead-letter context. Never includes payloads. */
export function describeError(error: unknown, maxMessage = 500): { type: string; message: string } {
  if (error instanceof Error) return { type: error.name, message: error.message.slice(0, maxMessage) };
  return { type: typeof error, message: String(error).slice(0, maxMessage) };
}
