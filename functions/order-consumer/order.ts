import { z } from "zod";

/** The order message the reference service accepts. */
export const Order = z.object({
  orderId: z.string().min(1),
  customerId: z.string().min(1),
  amountCents: z.number().int().positive(),
  items: z.array(z.object({ sku: z.string(), qty: z.number().int().positive() })).default([]),
});
export type Order = z.infer<typeof Order>;
