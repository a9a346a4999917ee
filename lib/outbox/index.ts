/**
 * reliable-consumers/outbox: the transactional inbox and outbox on DynamoDB. A handler stages its
 * writes and events in a unit of work (`createInboxOutbox`, `withUnitOfWork`), committed in one
 * transaction with the message's inbox marker; the relay (`createOutboxRelay`) publishes the events
 * from the table's stream, the sweeper (`createOutboxSweeper`) what the stream missed. See the outbox
 * guide.
 */

export { BusinessConditionFailedError } from "./errors.ts";
export type { NewOutboxEvent } from "./outboxEvent.ts";
export { OUTBOX_HEADERS } from "./outboxEvent.ts";
export type { OutboxPublisherOptions } from "./publisher.ts";
export { createOutboxRelay, type OutboxRelay, type OutboxRelayOptions, type RelayReport } from "./relay.ts";
export { OUTBOX_TABLE } from "./schema.ts";
export { discardParked, requeueParked } from "./settle.ts";
export {
  createOutboxSweeper,
  type OutboxSweeper,
  type OutboxSweeperOptions,
  type SweepReport,
} from "./sweeper.ts";
export {
  createInboxOutbox,
  type InboxOutbox,
  type StageOptions,
  type UnitOfWork,
  type UnitOfWorkOptions,
  type UnitOfWorkResult,
} from "./unitOfWork.ts";
export { withUnitOfWork } from "./withUnitOfWork.ts";
