// The Kafka guide's consumer (docs/kafka.md includes the region); test/integration/guideExamples.test.ts
// runs it against the emulators' Kafka and DynamoDB Local, with a payment provider on 127.0.0.1.
// #region handler
import { PermanentError } from "reliable-consumers";
import { kafkaConsumer } from "reliable-consumers/kafka";
import { z } from "zod";

const OrderPlaced = z.object({ orderId: z.string(), customerId: z.string(), amountCents: z.number().int() });
type OrderPlaced = z.infer<typeof OrderPlaced>;

async function charge(order: OrderPlaced, idempotencyKey: string, signal: AbortSignal): Promise<void> {
  if (order.amountCents > 1_000_000) throw new PermanentError("over the limit"); // → <topic>.DLQ at once
  const res = await fetch(`${process.env.PAYMENT_GATEWAY_URL}/charges`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: JSON.stringify(order),
    signal,
  });
  if (!res.ok) throw new Error(`payment provider answered ${res.status}`); // transient → <topic>.retry.5s
}

export const handler = kafkaConsumer<OrderPlaced>(
  async ({ body, id }, { signal }) => charge(body, id, signal), // id = "payment:<orderId>"
  {
    consumer: "payment-consumer", // the x-consumer header and the dedup scope
    schema: OrderPlaced, // any Standard Schema; a mismatch goes to the dead-letter topic
    key: (order) => `payment:${order.orderId}`, // the business dedup key, kept across the ladder
    ordering: "key", // keys side by side, each key in offset order
    retry: { delays: ["5s", "1m", "10m"] }, // <topic>.retry.5s → .retry.1m → .retry.10m → <topic>.DLQ
  },
);
// #endregion handler
