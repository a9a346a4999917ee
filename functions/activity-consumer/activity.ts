import { z } from "zod";

/**
 * A customer's activity event on the order-activity Kinesis stream (partition key = customerId):
 * `seq` numbers a customer's events from 1 in the order the producer put them.
 */
export const Activity = z.object({
  activityId: z.string().min(1),
  customerId: z.string().min(1),
  seq: z.number().int().positive(),
  kind: z.string().min(1),
});
export type Activity = z.infer<typeof Activity>;

/** The app table's items of a customer's activity: its head and one item per applied event. */
export const activityPk = (customerId: string): string => `ACTIVITY#${customerId}`;
export const ACTIVITY_HEAD_SK = "HEAD";
export const activitySk = (seq: number): string => `SEQ#${String(seq).padStart(10, "0")}`;
