// After: the same handler on reliable-consumers, reading Powertools' records during the cut-over.
// docs/migrating-from-powertools.md includes this file; test/integration/migrateFromPowertools.test.ts runs it.
import { type SqsConsumerConfig, sqsConsumer } from "reliable-consumers/sqs";
import { chargeOrder, type Order } from "./orders.ts";

// #region powertools
/** Where Powertools kept its records, and until when to read them (set by the stack: stack.ts). */
const powertools = {
  tableName: process.env.POWERTOOLS_TABLE_NAME ?? "",
  // The old function's name: the part before `#` in Powertools' keys.
  keyPrefix: process.env.POWERTOOLS_KEY_PREFIX ?? "",
  // Cut-over + the old function's timeout + Powertools' expiresAfterSeconds (1 h by default).
  until: process.env.POWERTOOLS_CUTOVER_UNTIL ?? "",
};
// #endregion powertools

// #region after
export const config: SqsConsumerConfig<Order> = {
  key: (order) => order.orderId, // the business key Powertools hashed: powertools_json(body).orderId
  idempotency: {
    powertoolsCutover: { ...powertools, data: ({ body }) => (body as Order).orderId },
  },
};

export const handler = sqsConsumer<Order>(({ body }) => chargeOrder(body), config);
// #endregion after

// #region message-id
/** For a Powertools handler keyed on `eventKeyJmesPath: "messageId"`. */
export const messageIdConfig: SqsConsumerConfig<Order> = {
  // No `key`: ours keys on the message id too (unless the producer sets a `message-id` attribute).
  idempotency: {
    powertoolsCutover: {
      ...powertools,
      data: ({ source }) => (source.kind === "sqs" ? source.messageId : undefined),
    },
  },
};
// #endregion message-id
