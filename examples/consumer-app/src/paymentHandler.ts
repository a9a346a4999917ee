// A DynamoDB Streams consumer of the payments table: one effect per written payment.
import { dynamodbStreamConsumer } from "reliable-consumers/dynamodb-streams";
import { countEffect, type StreamWork } from "./streamEffects.js";

interface Payment extends StreamWork {
  readonly amountCents: number;
}

/** A Standard Schema written by hand (zod, valibot or arktype give one): a payment has whole cents. */
const Payment = {
  "~standard": {
    version: 1 as const,
    vendor: "consumer-app",
    validate: (value: unknown) => {
      const v = value as Partial<Payment> | undefined;
      return typeof v?.id === "string" && Number.isInteger(v.amountCents)
        ? { value: v as Payment }
        : { issues: [{ message: "a payment needs an id and whole amountCents" }] };
    },
  },
};

export const handler = dynamodbStreamConsumer<Payment>(async ({ body }) => countEffect(body), {
  schema: Payment, // a schema violation is parked with its context: the stream moves on
  eventNames: ["INSERT"],
  ordering: "key", // items side by side, each item's changes in order
});
