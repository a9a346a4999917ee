// The outbox guide's unit of work (docs/outbox.md includes the regions); test/integration/guideExamples.test.ts
// runs it against DynamoDB Local and the emulators' SQS.
// #region unit-of-work
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { PermanentError } from "reliable-consumers";
import { createInboxOutbox, withUnitOfWork } from "reliable-consumers/outbox";
import { sqsConsumer } from "reliable-consumers/sqs";

class OutOfStockError extends PermanentError {}

const inbox = createInboxOutbox({
  tableName: process.env.APP_TABLE_NAME!,
  scope: "reservation-consumer", // the consumer: two consumers of one message both process it
  defaultDestination: "kafka:order-events",
  client: new DynamoDBClient({}),
});

export const handler = sqsConsumer<{ orderId: string; sku: string }>(
  withUnitOfWork(inbox, (uow) => {
    const { orderId, sku } = uow.envelope.body;
    uow.put({ Item: { pk: `RES#${orderId}`, sk: "RES", sku } });
    uow.update(
      {
        Key: { pk: `STOCK#${sku}`, sk: "STOCK" },
        UpdateExpression: "SET qty = qty - :one",
        ConditionExpression: "qty >= :one",
        ExpressionAttributeValues: { ":one": 1 },
      },
      { label: "stock", onConditionFailed: (old) => new OutOfStockError(`stock is ${String(old?.qty)}`) },
    );
    uow.publish({
      aggregateType: "order",
      aggregateId: orderId,
      eventType: "StockReserved",
      payload: { orderId, sku },
    });
  }),
  { key: (m) => m.orderId, idempotency: false }, // the inbox marker replaces the dedup store
);
// #endregion unit-of-work
