// The migration guide's "after": examples/powertoolsOrders.ts on reliable-consumers
// (docs/migrating-from-powertools.md includes the region); test/integration/guideExamples.test.ts
// runs both on the same batch.
// #region after
import { sqsConsumer } from "reliable-consumers/sqs";
import { recordOrder } from "./orderEffects.ts";

export const handler = sqsConsumer<{ orderId: string }>(async ({ body }) => recordOrder(body), {
  key: (order) => order.orderId, // was eventKeyJmesPath: "powertools_json(body).orderId"
  consumer: "orders", // the dedup scope: a stable name, so a redeploy keeps every stored key
  // idempotency: on by default, on DEDUP_TABLE_NAME (was IDEMPOTENCY_TABLE_NAME)
});
// #endregion after
