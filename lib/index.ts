/**
 * reliable-consumers: what every consumer shares. The record envelope your handler gets, the errors
 * it throws (permanent or transient) and the typed errors bad input is parked with, the failure
 * context a dead letter carries, the dedup store and its table, and the telemetry. The consumers
 * are in `reliable-consumers/sqs` and `/kafka`, the inbox and outbox in `/outbox`, the dead-letter
 * tooling in `/dlq`, the constructs in `/cdk`.
 */

export type { Envelope, RecordSource } from "./core/envelope.ts";
export {
  ConsumerConfigError,
  classifyError,
  type ErrorKind,
  InvalidJsonError,
  MalformedRecordError,
  MissingIdError,
  PayloadTooLargeError,
  PermanentError,
  SchemaValidationError,
  TransientError,
  UnknownEventShapeError,
} from "./core/errors.ts";
export { CONTEXT_HEADERS, type FailureContext } from "./core/failureContext.ts";
export {
  type ClaimResult,
  createDedupStore,
  type DedupStore,
  type DedupStoreOptions,
  type Lease,
} from "./dedup/dedupStore.ts";
export type { DuplicateHandler, IdempotencyOptions } from "./dedup/idempotency.ts";
export type { PowertoolsCutoverOptions } from "./dedup/powertoolsCutover.ts";
export { DEDUP_TABLE } from "./dedup/schema.ts";
export { createTelemetry, METRIC, type Telemetry, type TelemetryOptions } from "./observability/telemetry.ts";
