import type { Envelope } from "../core/envelope.ts";
import type { InboxOutbox, UnitOfWork, UnitOfWorkResult } from "./unitOfWork.ts";

/**
 * Adapts a unit-of-work handler to a per-record handler of any consumer middleware that hands over
 * an Envelope (the SQS batch consumer, the Kafka consumer). Run the consumer with its own dedup
 * store turned off (`idempotency: false`): the inbox marker inside the transaction replaces it.
 *
 * ```ts
 * const inbox = createInboxOutbox({ tableName, scope: "order-consumer" });
 * export const handler = sqsConsumer<Order>(
 *   withUnitOfWork(inbox, (uow) => {
 *     uow.put({ Item: { pk: `ORDER#${uow.envelope.body.orderId}`, sk: "ORDER" } });
 *     uow.publish({ aggregateType: "order", aggregateId: uow.envelope.body.orderId, eventType: "OrderPlaced", payload: uow.envelope.body });
 *   }),
 *   { schema: Order, key: (o) => o.orderId, idempotency: false },
 * );
 * ```
 *
 * A duplicate resolves normally (the consumer acks it); errors propagate with their class, so the
 * consumer retries transient ones and parks permanent ones.
 */
export function withUnitOfWork<TBody, T, TCtx = unknown>(
  inbox: InboxOutbox,
  handler: (uow: UnitOfWork<TBody>, ctx: TCtx) => Promise<T> | T,
): (envelope: Envelope<TBody>, ctx: TCtx) => Promise<UnitOfWorkResult<T>> {
  return (envelope, ctx) => inbox.run(envelope, (uow) => handler(uow, ctx));
}
