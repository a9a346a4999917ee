import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createTelemetry, PermanentError } from "reliable-consumers";
import { createInboxOutbox, withUnitOfWork } from "reliable-consumers/outbox";
import { sqsConsumer } from "reliable-consumers/sqs";
import { Order } from "./order.ts";

/** The same order id arrived again with different contents: a business conflict, not a retry. */
export class OrderConflictError extends PermanentError {}

const telemetry = createTelemetry({ serviceName: "order-consumer" });
const ddb = new DynamoDBClient({});

/**
 * Order intake as one unit of work. For each message, ONE TransactWriteItems writes:
 *   1. the inbox marker INBOX#order-consumer#<orderId> (only if absent: the dedup mark),
 *   2. the order item ORDER#<orderId> (only if absent),
 *   3. the OrderPlaced outbox event, pending, which the outbox relay publishes to Kafka
 *      (key = orderId) or wherever ORDER_EVENTS_DESTINATION points.
 * All or nothing: a redelivered or resent order changes nothing and publishes nothing twice; a crash
 * before the commit leaves nothing behind. The dedup key is the business key (orderId), so the SQS
 * consumer's own dedup store is off: the inbox marker is the dedup record.
 *
 * Environment: APP_TABLE_NAME (the app table), ORDER_EVENTS_DESTINATION (@default kafka:$KAFKA_TOPIC, else
 * kafka:order-events),
 * INBOX_SCOPE (@default order-consumer), DLQ_URL (optional; else the queue's redrive target).
 */
export const inbox = createInboxOutbox({
  tableName: process.env.APP_TABLE_NAME ?? "app",
  scope: process.env.INBOX_SCOPE ?? "order-consumer",
  defaultDestination:
    process.env.ORDER_EVENTS_DESTINATION ?? `kafka:${process.env.KAFKA_TOPIC ?? "order-events"}`,
  client: ddb,
  telemetry,
});

export const handler = sqsConsumer<Order>(
  withUnitOfWork<Order, string>(inbox, (uow) => {
    const order = uow.envelope.body;
    uow.put(
      {
        Item: {
          pk: `ORDER#${order.orderId}`,
          sk: "ORDER",
          orderId: order.orderId,
          customerId: order.customerId,
          amountCents: order.amountCents,
          itemCount: order.items.length,
          status: "PLACED",
          createdAt: new Date().toISOString(),
        },
        ConditionExpression: "attribute_not_exists(pk)",
      },
      {
        label: "order",
        // The marker is new but the order exists: the same orderId was used by another message.
        onConditionFailed: () => new OrderConflictError(`order ${order.orderId} already exists`),
      },
    );
    return uow.publish({
      aggregateType: "order",
      aggregateId: order.orderId,
      eventType: "OrderPlaced",
      payload: {
        orderId: order.orderId,
        customerId: order.customerId,
        amountCents: order.amountCents,
        items: order.items,
      },
    });
  }),
  { schema: Order, key: (order) => order.orderId, idempotency: false, telemetry },
);
