import { inspectKafkaDeadLetters, replayKafkaDeadLetters } from "reliable-consumers/dlq";
import { startChaosService } from "./chaosService.ts";
import { checkPipeline, deadLetteredOrders, type Expectation } from "./invariants.ts";
import { createRng } from "./rng.ts";
import { type ScenarioContext, type ScenarioResult, settle, withFaults } from "./scenarios.ts";
import { readTopic } from "./storedState.ts";
import { makeOrders } from "./workload.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ───────────────────────── 11. a record kills its function ─────────────────────────

/**
 * payment-consumer's dedup lease in scenario 11 (ms): what each kill costs in waiting, a third of
 * the 30 s default. A live charge's lease is still renewed with seconds to spare (the keeper looks
 * every third of the lease and renews once half is gone).
 */
const PAYMENT_LEASE_MS = 10_000;

/**
 * Orders among which a few kill the payment environment whenever they are charged: a record that
 * crashes its function every time, as one that makes the handler run out of memory does. No
 * exception reaches the consumer, so it cannot route the record; before issue 26 its mapping
 * resent the batch without end and its partition stood still for good.
 *
 * The environment is terminated by the chaos hook at the moment of the charge (the provider's
 * `before` decision), which is what Lambda does to one that exhausts its memory ("Runtime exited
 * with error: signal: killed"). A real out-of-memory in the local runtime is not possible: a
 * worker thread that reaches its heap limit aborts the whole Node process, host included
 * (measured on Node 24: `FATAL ERROR: Reached heap limit`, exit 134).
 *
 * Expect: Lambda's mapping (bisect, a finite retry limit, `kafka://<topic>.DLQ`) isolates each
 * such record to the dead-letter topic, in Lambda's own format, never charged; every other order
 * is charged (those behind it on its partition too), repeats only where a kill explains them;
 * `npm run dlq` reads the records Lambda wrote and would replay each to the main topic.
 *
 * Each kill leaves the record's dedup lease behind, which is never taken over (issue 34 item 10):
 * the redelivery waits it out and hands the record back, one retry attempt more, then the next
 * retry kills again. So isolation takes about ⌈(retry attempts + 1) ÷ 2⌉ leases: 6–7 kills of
 * 30 s at the stack's defaults (10 attempts), past the run's wait. The run shortens the payment
 * consumer's lease (`PAYMENT_LEASE_MS`), as the chaos app shortens the ladder: the same steps, in
 * seconds.
 */
export async function recordKillsItsFunction(
  ctx: ScenarioContext,
  options: { orders: number; crashers: number },
): Promise<ScenarioResult> {
  const started = Date.now();
  const id = `chaos-kills-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;
  const w = makeOrders(options.orders, { rng: createRng(ctx.seed + 11), runId: id });
  // Spread the crashers over the run, so they meet other orders on their partitions.
  const good = [...w.expected].filter(([, e]) => e.kind === "good");
  const step = Math.max(1, Math.floor(good.length / (options.crashers + 1)));
  const crashers = new Set<string>();
  const expected = new Map<string, Expectation>(w.expected);
  for (let k = 1; k <= options.crashers && k * step < good.length; k++) {
    const [chaosId, e] = good[k * step]!;
    if (e.kind !== "good") continue;
    crashers.add(e.orderId);
    expected.set(chaosId, { kind: "crasher", orderId: e.orderId });
  }
  let kills = 0;
  const service = await startChaosService({
    assembly: ctx.assembly,
    prefix: id,
    direct: ctx.endpoints,
    paymentLeaseMs: PAYMENT_LEASE_MS,
    crashDecision: (orderId) => {
      if (!crashers.has(orderId)) return "none";
      kills++;
      return "before";
    },
  });
  try {
    await service.send(w.messages);
    const timeoutMs = ctx.settleTimeoutMs ?? 300_000;
    const s = await settle(service, expected, timeoutMs, ctx.log);
    // Every other order is charged; now each crasher must reach the dead-letter topic.
    const deadline = Date.now() + timeoutMs;
    let isolated = new Map<string, "consumer" | "lambda">();
    for (;;) {
      const letters = deadLetteredOrders(await readTopic(service.kafka, service.names.deadLetterTopic));
      isolated = new Map(
        [...crashers].filter((o) => letters.has(o)).map((o) => [o, letters.get(o)!.writtenBy] as const),
      );
      if (isolated.size === crashers.size || Date.now() > deadline) break;
      await sleep(2_000);
    }
    ctx.log(
      `  ${isolated.size}/${crashers.size} records that kill their function on the DLQ topic after ${kills} kills`,
    );
    const check = await checkPipeline(service, expected);
    // What `npm run dlq` makes of them (a dry run moves nothing).
    const connection = { brokers: ctx.endpoints.kafkaBrokers };
    const inspected = await inspectKafkaDeadLetters(service.names.deadLetterTopic, { connection });
    const replay = await replayKafkaDeadLetters(service.names.deadLetterTopic, {
      connection,
      dryRun: true,
      ledger: false,
    });
    const byLambda = [...isolated.values()].filter((by) => by === "lambda").length;
    const replayable = replay.byDestination[service.names.topic] ?? 0;
    return {
      name: "recordKillsItsFunction",
      figures: withFaults(
        {
          ...check.figures,
          settled: s.settled,
          crashers: crashers.size,
          kills,
          crashersOnDlq: isolated.size,
          crashersOnDlqByLambda: byLambda,
          // The dlq tool must read every one of them, and replay it to the main topic.
          crashersNotReplayable: Math.max(0, crashers.size - replayable),
        },
        w.messages.length,
        kills,
      ),
      details: {
        ...check.details,
        notIsolated: [...crashers].filter((o) => !isolated.has(o)),
        dlqErrorTypes: Object.keys(inspected.byErrorType),
      },
      durationMs: Date.now() - started,
    };
  } finally {
    await service.stop();
  }
}
