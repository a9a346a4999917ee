import { PermanentError, TransientError } from "reliable-consumers";
import { z } from "zod";

/** The OrderPlaced event the outbox relay publishes to `order-events` (key = orderId). */
export const OrderPlaced = z.object({
  orderId: z.string().min(1),
  customerId: z.string().min(1),
  amountCents: z.number().int().positive(),
  items: z.array(z.unknown()).optional(),
});
export type OrderPlaced = z.infer<typeof OrderPlaced>;

/** The payment provider refused the charge for good (a business rule): dead-letter it. */
export class PaymentDeclinedError extends PermanentError {}

export interface Charge {
  readonly orderId: string;
  readonly customerId: string;
  readonly amountCents: number;
  /** Sent as `Idempotency-Key`: the provider charges once per key, however often we call. */
  readonly idempotencyKey: string;
}

export interface PaymentGateway {
  charge(charge: Charge, signal: AbortSignal): Promise<{ paymentId: string }>;
}

/**
 * An HTTP payment provider in the style of Stripe's API: POST with an `Idempotency-Key`, so a
 * redelivered or replayed event never charges twice even if our dedup record was lost. 5xx, 429
 * and network errors are transient (retry ladder); other 4xx are permanent (dead-letter topic).
 */
export function httpPaymentGateway(baseUrl: string, fetchImpl: typeof fetch = fetch): PaymentGateway {
  return {
    async charge(charge, signal) {
      let response: Response;
      try {
        response = await fetchImpl(new URL("/charges", baseUrl), {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": charge.idempotencyKey },
          body: JSON.stringify({
            orderId: charge.orderId,
            customerId: charge.customerId,
            amountCents: charge.amountCents,
          }),
          signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]),
        });
      } catch (error) {
        throw new TransientError(`payment provider unreachable: ${(error as Error).message}`, {
          cause: error,
        });
      }
      if (response.status === 429 || response.status >= 500) {
        throw new TransientError(`payment provider answered ${response.status}`);
      }
      if (!response.ok) {
        throw new PaymentDeclinedError(`payment provider declined the charge (${response.status})`);
      }
      const body = (await response.json()) as { id?: string };
      return { paymentId: body.id ?? charge.idempotencyKey };
    },
  };
}

/**
 * The reference service has no real provider: without PAYMENT_GATEWAY_URL, charges are accepted
 * locally (the effect is the log line and the dedup record), except amounts over the limit.
 */
export function stubPaymentGateway(limitCents = 1_000_000): PaymentGateway {
  return {
    async charge(charge) {
      if (charge.amountCents > limitCents) {
        throw new PaymentDeclinedError(`amount ${charge.amountCents} exceeds the ${limitCents} limit`);
      }
      return { paymentId: `pay_${charge.idempotencyKey}` };
    },
  };
}
