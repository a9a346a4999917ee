/**
 * The reference service as `npm run chaos` runs it: the same stack (infra/stacks), with the props
 * that make faults recover in seconds instead of minutes. Run by `synthesizeChaosApp` as a CDK app.
 *
 * - The Kafka ladder waits 1 s, 5 s, 35 s (the rungs' sum outlasts the 30 s dedup lease a crashed
 *   payment environment leaves behind) instead of 5 s, 1 min, 10 min.
 * - order-consumer times out after 7 s (5 s of it is the consumers' stop-starting margin), so the
 *   orders queue's visibility is 42 s (6×) instead of 3 min: a batch whose environment crashed
 *   comes back sooner. Ten receives before the DLQ, since a database outage fails a message
 *   several times without it being poison.
 * - activity-consumer's Kinesis trigger gives up on a batch after 2 retries (bisection does not
 *   count), so a record that crashes its function is isolated in a dozen invocations instead of 20.
 * - The topic is a placeholder (`CHAOS_TOPIC`) that each scenario replaces with its own name, so
 *   runs on one broker never read each other's records.
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { App, Duration } from "aws-cdk-lib";
import { readContext } from "../infra/config.ts";
import { ORDER_EVENTS_LADDER, ReferenceServiceStack } from "../infra/stacks/referenceServiceStack.ts";

export const CHAOS_TOPIC = "chaostopicplaceholder";
export const CHAOS_STACK = "ChaosReference";

export function buildChaosApp(app: App = new App()): App {
  new ReferenceServiceStack(app, CHAOS_STACK, {
    context: readContext(app),
    orderEventsLadder: { ...ORDER_EVENTS_LADDER, topic: CHAOS_TOPIC, retryDelaysSeconds: [1, 5, 35] },
    orderConsumerTimeout: Duration.seconds(7),
    ordersQueue: { maxReceiveCount: 10 },
    // Scenarios 2, 7 and 9 write account events to their own topic (chaos/workload.ts): granted too.
    moreOutboxTopics: [`${CHAOS_TOPIC}-accounts`],
    activityTrigger: { retryAttempts: 2 },
  });
  return app;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  buildChaosApp().synth();
}
