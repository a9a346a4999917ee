/** The transactional inbox + outbox: public API. See docs/outbox.md. */

export {
  AGGREGATE_ORDER_DEFAULTS,
  type PredecessorState,
  predecessorState,
  predecessorStates,
} from "./aggregateOrder.ts";
export * from "./errors.ts";
export { attributeValueSize, itemSize, TRANSACTION_LIMITS } from "./itemSize.ts";
export {
  type AggregatePosition,
  isOutboxKey,
  type NewOutboxEvent,
  newEventId,
  newTraceparent,
  OUTBOX_HEADERS,
  type OutboxEvent,
  parseOutboxItem,
  pendingShard,
  positionOf,
  publishedHeaders,
  toOutboxItem,
} from "./outboxEvent.ts";
export {
  createOutboxPublisher,
  type OutboxPublisher,
  type OutboxPublisherOptions,
  type PublishOutcome,
  parseDestination,
  SQS_LIMITS,
  type Target,
  toSqsAttributes,
} from "./publisher.ts";
export { createOutboxRelay, type OutboxRelay, type OutboxRelayOptions, type RelayReport } from "./relay.ts";
export * from "./schema.ts";
export { clearPending, clearPendingFenced, discardParked, requeueParked } from "./settle.ts";
export { assertDynamoDbStreamEvent } from "./streamEvent.ts";
export {
  createOutboxSweeper,
  type OutboxSweeper,
  type OutboxSweeperOptions,
  type SweepReport,
} from "./sweeper.ts";
export {
  createInboxOutbox,
  type InboxOutbox,
  type StagedConditionCheck,
  type StagedDelete,
  type StagedPut,
  type StagedUpdate,
  type StageOptions,
  type UnitOfWork,
  type UnitOfWorkOptions,
  type UnitOfWorkResult,
} from "./unitOfWork.ts";
export { withUnitOfWork } from "./withUnitOfWork.ts";
