import { MalformedRecordError, PermanentError, TransientError } from "../core/errors.ts";

/**
 * Errors of the unit of work, the relay and the sweeper. Permanent ones are never retried (they are
 * reported to the handler's caller, or parked by the relay); transient ones are retried.
 */

/** The unit does not fit one TransactWriteItems (100 actions, 4 MB, 400 KB per item). Nothing was written. */
export class UnitOfWorkTooLargeError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "UnitOfWorkTooLargeError";
  /** The transaction's actions (a count): inbox marker, staged writes, events and aggregate heads. */
  readonly actions: number;
  /** The transaction's estimated size, bytes. */
  readonly estimatedBytes: number;
  /** Creates the error with its message, the action count and the estimated size (bytes). */
  constructor(message: string, actions: number, estimatedBytes: number) {
    super(message);
    this.actions = actions;
    this.estimatedBytes = estimatedBytes;
  }
}

/** The staged writes are not a valid transaction (two writes to one item, a missing key, a bad event). */
export class UnitOfWorkInvalidError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "UnitOfWorkInvalidError";
}

/**
 * A staged write's condition failed: a business rule said no. Handlers usually pass
 * `onConditionFailed` to throw their own typed error instead; this is the default.
 */
export class BusinessConditionFailedError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "BusinessConditionFailedError";
  /** The write's label (or `put#2`-style position) among the staged writes. */
  readonly label: string;
  /** The item as it was, when DynamoDB returned it (ReturnValuesOnConditionCheckFailure: ALL_OLD). */
  readonly existing: Record<string, unknown> | undefined;
  /** Creates the error for the staged write `label`, with the item as it was (if DynamoDB returned it). */
  constructor(label: string, existing: Record<string, unknown> | undefined) {
    super(`condition of staged write '${label}' failed`);
    this.label = label;
    this.existing = existing;
  }
}

/** Another transaction touched one of the items at the same time (TransactionConflict). Retry. */
export class TransactionConflictError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "TransactionConflictError";
}

/** DynamoDB throttled the transaction (ThrottlingError, ProvisionedThroughputExceeded). Retry. */
export class TransactionThrottledError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "TransactionThrottledError";
}

/** DynamoDB rejected the transaction as invalid (ValidationError, item collection too large). */
export class TransactionRejectedError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "TransactionRejectedError";
  /** Why DynamoDB rejected it: `Code: message` per rejected action, or the request error's name. */
  readonly reasons: ReadonlyArray<string>;
  /** Creates the error with its message and DynamoDB's cancellation reasons. */
  constructor(message: string, reasons: ReadonlyArray<string>) {
    super(message);
    this.reasons = reasons;
  }
}

/** A stream record reached the relay that is not an outbox event (the event-source filter is missing or wrong). */
export class NotAnOutboxItemError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "NotAnOutboxItemError";
}

/** An outbox item whose attributes are missing or of the wrong type. Parked, never dropped. */
export class MalformedOutboxItemError extends MalformedRecordError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "MalformedOutboxItemError";
}

/** The event names a destination that the relay has no route for. Parked. */
export class UnknownDestinationError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "UnknownDestinationError";
}

/** The destination refused this event for good (too large, invalid contents). Parked. */
export class PublishRejectedError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "PublishRejectedError";
}

/** The destination could not take the event now (connection, throttling, a failed batch entry). Retried. */
export class PublishFailedError extends TransientError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "PublishFailedError";
}

/** The stream does not carry new images (StreamViewType KEYS_ONLY / OLD_IMAGE). A deployment error: the whole batch fails. */
export class StreamViewTypeError extends PermanentError {
  /** The literal class name, matched by `x-last-error` and `--error-type`. */
  override name = "StreamViewTypeError";
}
