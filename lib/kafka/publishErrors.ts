import { PermanentError, TransientError } from "../core/errors.ts";

/**
 * Classification of kafkajs producer errors (pure: duck-typed on kafkajs' `name`, `type`,
 * `retriable` and `cause`, so no kafkajs import and no trouble with duplicate copies of it).
 *
 * - **Permanent**: the *message* can never be accepted: too large, an invalid record, an invalid
 *   topic name. Retrying it only blocks the line; the caller dead-letters it.
 * - **Transient**: everything else. Connection loss, request timeouts, leader elections, throttling,
 *   and also authorization / SASL failures: those are the deployment's fault, not the message's, so
 *   we retry (and alarm) instead of dead-lettering good messages while IAM is misconfigured.
 *
 * kafkajs wraps the last error in `KafkaJSNumberOfRetriesExceeded` when its own retries run out;
 * we look through `cause` chains to the root error.
 */
export const PERMANENT_PROTOCOL_ERRORS: ReadonlySet<string> = new Set([
  "MESSAGE_TOO_LARGE",
  "RECORD_LIST_TOO_LARGE",
  "INVALID_RECORD",
  "INVALID_TOPIC_EXCEPTION",
  "INVALID_REQUIRED_ACKS",
  "UNSUPPORTED_COMPRESSION_TYPE",
  "INVALID_TIMESTAMP",
]);

/** A record the cluster will never accept. */
export class KafkaPublishPermanentError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "KafkaPublishPermanentError";
  /** The broker's error type (e.g. `MESSAGE_TOO_LARGE`), when the cluster gave one. */
  readonly kafkaType: string | undefined;
  /** Creates the error with its message, the broker's error type and the kafkajs error it wraps. */
  constructor(message: string, kafkaType: string | undefined, cause: unknown) {
    super(message, { cause });
    this.kafkaType = kafkaType;
  }
}

/** A publish that may succeed later (connection, timeout, leadership, auth). */
export class KafkaPublishTransientError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "KafkaPublishTransientError";
  /** The broker's error type (e.g. `NOT_LEADER_FOR_PARTITION`), when the cluster gave one. */
  readonly kafkaType: string | undefined;
  /** Creates the error with its message, the broker's error type and the kafkajs error it wraps. */
  constructor(message: string, kafkaType: string | undefined, cause: unknown) {
    super(message, { cause });
    this.kafkaType = kafkaType;
  }
}

interface KafkaJsLike {
  name?: unknown;
  type?: unknown;
  retriable?: unknown;
  cause?: unknown;
  errors?: unknown;
  message?: unknown;
}

/** The innermost kafkajs error (through `cause` and the first of an aggregate's `errors`). */
export function rootKafkaError(error: unknown): KafkaJsLike | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 10; depth++) {
    if (typeof current !== "object" || current === null) return undefined;
    const e = current as KafkaJsLike;
    if (typeof e.type === "string") return e; // a protocol error: the broker's verdict
    if (e.cause !== undefined) {
      current = e.cause;
      continue;
    }
    if (Array.isArray(e.errors) && e.errors.length > 0) {
      current = e.errors[0];
      continue;
    }
    return e;
  }
  return undefined;
}

/** Maps any producer error to KafkaPublishPermanentError or KafkaPublishTransientError. */
export function classifyPublishError(
  error: unknown,
  topic: string,
): KafkaPublishPermanentError | KafkaPublishTransientError {
  if (error instanceof KafkaPublishPermanentError || error instanceof KafkaPublishTransientError)
    return error;
  const root = rootKafkaError(error);
  const type = typeof root?.type === "string" ? root.type : undefined;
  const message = error instanceof Error ? error.message : String(error);
  if (type !== undefined && PERMANENT_PROTOCOL_ERRORS.has(type)) {
    return new KafkaPublishPermanentError(
      `publish to '${topic}' rejected (${type}): ${message}`,
      type,
      error,
    );
  }
  return new KafkaPublishTransientError(
    `publish to '${topic}' failed${type ? ` (${type})` : ""}: ${message}`,
    type,
    error,
  );
}
