/**
 * The error taxonomy every adapter shares. `permanent` errors go to a dead-letter destination at
 * once (retrying them only blocks the line); `transient` ones are retried with backoff.
 */
export type ErrorKind = "permanent" | "transient";

/**
 * Every error class here sets a literal `name`: `x-last-error` and `npm run dlq -- --error-type`
 * match on it, and a bundle minified without `keepNames` would rename `new.target.name`. Each one
 * takes `{ cause }`, so a wrapped error keeps what went wrong underneath.
 */
export abstract class ConsumerError extends Error {
  /** How the consumer treats the error: `permanent` (dead-lettered at once) or `transient` (retried). */
  abstract readonly kind: ErrorKind;
  /** Creates the error with its message and, optionally, the error it wraps (`cause`). */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    // A user's own subclass (`class CardDeclined extends PermanentError {}`) keeps its class name;
    // the library's classes below set theirs as literals, which survive minification.
    this.name = new.target.name;
  }
}

/** Throw from a handler for a failure that no retry can fix (a business rule, a bad reference). */
export class PermanentError extends ConsumerError {
  /** Always `permanent`: the record goes to its dead-letter destination at once. */
  readonly kind = "permanent" as const;
  /** Creates the error with its message and, optionally, the error it wraps (`cause`). */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    if (new.target === PermanentError) this.name = "PermanentError";
  }
}

/** Throw from a handler to say explicitly that a retry may succeed. Any unknown error counts as this too. */
export class TransientError extends ConsumerError {
  /** Always `transient`: the record is retried with backoff, then dead-lettered when retries run out. */
  readonly kind = "transient" as const;
  /** Creates the error with its message and, optionally, the error it wraps (`cause`). */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    if (new.target === TransientError) this.name = "TransientError";
  }
}

/** The body is not valid JSON. */
export class InvalidJsonError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "InvalidJsonError";
}

/** The body does not match the consumer's Standard Schema. `issues` lists what is wrong. */
export class SchemaValidationError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "SchemaValidationError";
  /**
   * What is wrong, one issue each: a message and the path to the offending value (Standard Schema's shape).
   */
  readonly issues: ReadonlyArray<{
    message: string;
    path?: ReadonlyArray<PropertyKey | { key: PropertyKey }>;
  }>;
  /** Creates the error with its message, the schema's issues and, optionally, the error it wraps. */
  constructor(message: string, issues: SchemaValidationError["issues"], options?: { cause?: unknown }) {
    super(message, options);
    this.issues = issues;
  }
}

/** No usable dedup key: the key function returned nothing and there is no fallback. */
export class MissingIdError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "MissingIdError";
}

/** A body, header or value is larger than the consumer accepts. */
export class PayloadTooLargeError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "PayloadTooLargeError";
}

/** Headers or key bytes that cannot be decoded. */
export class MalformedRecordError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "MalformedRecordError";
}

/** The same dedup key arrived with a different payload: two messages collide on one key. */
export class KeyReuseError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "KeyReuseError";
}

/** The Lambda event is not of a shape this adapter understands. Thrown for the whole event. */
export class UnknownEventShapeError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "UnknownEventShapeError";
}

/** Another invocation holds the lease on this key right now; retry later. */
export class InProgressElsewhereError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "InProgressElsewhereError";
}

/**
 * This very delivery of the record (a Kafka offset) holds the lease on its key in another
 * invocation: the same offset handed to two invocations at once, or one that died holding it (its
 * lease ends within the lease length). Not another message: the record is handed back to its
 * trigger to come again, never routed on as if it had been dealt with.
 */
export class DeliveryInProgressError extends InProgressElsewhereError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "DeliveryInProgressError";
}

/** Our lease was taken over (it expired and someone else claimed), so we may not complete. */
export class LeaseLostError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "LeaseLostError";
}

/**
 * There was not enough Lambda time left to start this record. The record is unfinished, not
 * failed: it comes back without using up an attempt.
 */
export class OutOfTimeError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "OutOfTimeError";
}

/**
 * The record was still running at the run's deadline (the Lambda's time less the settlement
 * reserve, `settleReserveMs`): the reason its `signal` aborts with. Unlike `OutOfTimeError` the
 * record failed, as a timeout fails it: the attempt counts, so a record that always outruns the
 * function ends in the dead-letter queue with its context instead of coming back forever.
 */
export class RecordTimeoutError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "RecordTimeoutError";
}

/**
 * A settlement call (a completion, a requeue, a park, a visibility change, a produce) was cut at the
 * settlement deadline, so that the batch answers before Middy's early timeout. Its outcome is
 * unknown: the record it was for is not acked on its account.
 */
export class SettlementTimeoutError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "SettlementTimeoutError";
}

/**
 * Not started because an earlier record of its lane (a FIFO message group, a Kafka partition or key)
 * is unfinished: running it would overtake that record. Healthy; it comes back behind it.
 */
export class HeldBackError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "HeldBackError";
}

/** A setting the consumer needs (an environment variable, an option) is missing or invalid. */
export class ConsumerConfigError extends Error {
  /** The literal class name, which survives minification. */
  override name = "ConsumerConfigError";
}

/**
 * The reasons a record is unfinished although nothing is wrong with it: another invocation holds
 * its key, it waits behind its lane, or time ran out. Such a record must not use up its retries.
 */
export function isHealthyUnfinished(error: unknown): boolean {
  return (
    error instanceof InProgressElsewhereError ||
    error instanceof HeldBackError ||
    error instanceof OutOfTimeError
  );
}

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
