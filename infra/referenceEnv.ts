/**
 * The environment variables only the reference service reads (the library's own are in
 * lib/env.ts, published with reliable-consumers/cdk). The stack sets them; one list, so a rename
 * breaks the typecheck instead of a deployment.
 */
export const REFERENCE_ENV = {
  /** The orders queue, for a client or a test that sends to it. */
  ordersQueueUrl: "ORDERS_QUEUE_URL",
  /** The orders queue's DLQ (the same queue as the order consumer's DLQ_URL). */
  ordersDlqUrl: "ORDERS_DLQ_URL",
  /** The report jobs queue. */
  reportQueueUrl: "REPORT_QUEUE_URL",
} as const;
