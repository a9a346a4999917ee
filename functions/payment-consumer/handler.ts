import { createTelemetry } from "reliable-consumers";
import { kafkaConsumer, ladderFromRuntimeConfig } from "reliable-consumers/kafka";
import { httpPaymentGateway, OrderPlaced, type PaymentGateway, stubPaymentGateway } from "./payment.ts";

const telemetry = createTelemetry({ serviceName: "payment-consumer" });

/**
 * DEDUP_LEASE_MS: how long a charge's dedup claim is exclusive without renewal (ms), read and
 * checked once, at init; unset, the dedup store's default (DEDUP_DEFAULTS.leaseMs, 30 s). It is
 * also how long the redelivery of a record whose environment died waits before it goes back to
 * Lambda (docs/kafka.md, "Event source mappings"), so a record that kills the function reaches
 * the dead-letter topic after about ⌈(retry attempts + 1) ÷ 2⌉ leases: chaos scenario 11 shortens
 * it to keep its run short.
 */
function dedupLeaseMs(): number | undefined {
  const text = process.env.DEDUP_LEASE_MS;
  if (text === undefined || text === "") return undefined;
  const ms = Number(text);
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new Error(`DEDUP_LEASE_MS must be a whole number of milliseconds above 0, got '${text}'`);
  return ms;
}
const leaseMs = dedupLeaseMs();

export const gateway: PaymentGateway = process.env.PAYMENT_GATEWAY_URL
  ? httpPaymentGateway(process.env.PAYMENT_GATEWAY_URL)
  : stubPaymentGateway();

/**
 * Charges the payment of each OrderPlaced event on `order-events` (MSK trigger, one event source
 * mapping per topic of the ladder: the main topic and each `.retry.*` topic).
 *
 * - Idempotent twice over: the dedup store (business key `payment:<orderId>`, scoped to this
 *   consumer) skips a charge that already succeeded, across redeliveries, the retry ladder and
 *   replays; and the provider gets the same `Idempotency-Key` on every attempt, so even a lost
 *   dedup record cannot charge twice.
 * - Orders run in parallel by key (orderId), each order's events in offset order, and an order
 *   with an event on the retry path holds its later events behind it (key order).
 * - Provider outages (5xx, 429, timeouts) climb `order-events.retry.5s → .1m → .10m` without
 *   blocking the partition; declines, invalid JSON and schema mismatches go straight to
 *   `order-events.DLQ` with their context. Replay with `npm run dlq -- replay --topic order-events.DLQ`.
 *
 * Environment: KAFKA_BROKERS, MSK_IAM_AUTH, KAFKA_RETRY_LADDER (from the CDK), DEDUP_TABLE_NAME,
 * DEDUP_WINDOW_SECONDS, PAYMENT_GATEWAY_URL (optional), DEDUP_LEASE_MS (optional).
 */
export const handler = kafkaConsumer<OrderPlaced>(
  async ({ body, id }, { signal }) => {
    const { paymentId } = await gateway.charge(
      {
        orderId: body.orderId,
        customerId: body.customerId,
        amountCents: body.amountCents,
        idempotencyKey: id,
      },
      signal,
    );
    telemetry.logger.info("payment charged", { orderId: body.orderId, paymentId });
  },
  {
    consumer: "payment-consumer",
    schema: OrderPlaced,
    // order-events is not compacted: a null value is not a tombstone here but a broken producer.
    allowNullValue: false,
    key: (order) => `payment:${order.orderId}`,
    ordering: "key",
    keyOrder: true,
    ...(process.env.KAFKA_RETRY_LADDER
      ? { retry: ladderFromRuntimeConfig(process.env.KAFKA_RETRY_LADDER) }
      : {}),
    idempotency: {
      ...(process.env.DEDUP_WINDOW_SECONDS
        ? { windowSeconds: Number(process.env.DEDUP_WINDOW_SECONDS) }
        : {}),
      ...(leaseMs !== undefined ? { leaseMs } : {}),
    },
    telemetry,
  },
);
