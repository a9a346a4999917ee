import { MalformedRecordError, PermanentError, TransientError } from "../../core/errors.ts";

// Literal names: bundles are minified, so `new.target.name` would be a mangled letter there, and
// the name is what the dead-letter copy's `x-last-error` and the logs show.

/** The bytes do not carry the framing the decoder expects (wrong magic byte or header, too short, truncated varint). */
export class WireFormatError extends MalformedRecordError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override readonly name = "WireFormatError";
}

/** The registry answered that the record's schema id (or version id) does not exist. */
export class UnknownSchemaError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override readonly name = "UnknownSchemaError";
}

/** The bytes do not decode with the writer's schema (or the local schema), or the writer and reader schemas cannot be resolved. */
export class UndecodableRecordError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override readonly name = "UndecodableRecordError";
}

/** The registry could not be reached or answered with an error that may pass (5xx, 429, auth). Retried, never dead-lettered for this alone. */
export class SchemaRegistryUnavailableError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override readonly name = "SchemaRegistryUnavailableError";
  /** Read by the Kafka consumer: the record goes back onto the retry ladder without using an attempt. */
  readonly usesNoAttempt = true;
}

/** True for failures that say nothing about the record itself (see SchemaRegistryUnavailableError). */
export const usesNoAttempt = (error: unknown): boolean =>
  typeof error === "object" &&
  error !== null &&
  (error as { usesNoAttempt?: unknown }).usesNoAttempt === true;

/** A schema the registry returned has another format than the decoder's (an Avro decoder got a Protobuf schema). */
export class SchemaFormatMismatchError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override readonly name = "SchemaFormatMismatchError";
}

/** A value to produce does not fit the schema it is declared with. Permanent: the event can never be sent so. */
export class UnencodableValueError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override readonly name = "UnencodableValueError";
}
