import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { badInputsThroughService } from "../../chaos/badInputScenario.ts";
import { disposeChaosApp, synthesizeChaosApp } from "../../chaos/chaosService.ts";
import {
  brokerDownDuringRebalance,
  databaseDies,
  poisonUnderLoad,
  randomFaults,
  relayGivesUp,
  relayLosesBroker,
  type ScenarioContext,
  type ScenarioResult,
} from "../../chaos/scenarios.ts";
import { verdict } from "../../chaos/verdict.ts";

/**
 * The chaos scenarios of `npm run chaos`, small: the reference stack's chaos variant synthesized
 * once, each scenario on the local runtime against the shared emulators (scenario 1 kills and
 * restarts a DynamoDB Local of its own). Each asserts the run's contract on what was stored:
 * nothing lost, no duplicate effect on the transactional path, every repeated charge explained by
 * an injected crash, nothing half-applied, aggregates in order, every bad input parked with its
 * typed error. Bounded: ~5 minutes in all.
 */
let ctx: ScenarioContext;
const base = {
  endpoints: {
    dynamodb: process.env.AWS_ENDPOINT_URL_DYNAMODB!,
    sqs: process.env.AWS_ENDPOINT_URL_SQS!,
    kafkaBrokers: (process.env.KAFKA_BROKERS ?? "").split(","),
  },
  seed: Number(process.env.CHAOS_SEED ?? 20261130),
  log: () => {},
  settleTimeoutMs: 150_000,
};

// The reference stack's chaos variant, synthesized (and bundled) once for every scenario.
beforeAll(async () => {
  ctx = { ...base, assembly: await synthesizeChaosApp() };
}, 180_000);
afterAll(() => disposeChaosApp(ctx?.assembly));

function expectContract(r: ScenarioResult) {
  const v = verdict([r]);
  expect(v.reasons, JSON.stringify({ figures: r.figures, details: r.details }).slice(0, 3000)).toEqual([]);
  expect(r.figures.faultsInjected).toBeGreaterThan(0);
}

describe.sequential("chaos scenarios (small)", () => {
  it("1. the database dies mid-transaction: nothing half-applied, every order processed", {
    timeout: 150_000,
  }, async () => {
    const r = await databaseDies(ctx, { orders: 60, kills: 1 });
    expectContract(r);
    expect(r.figures.halfApplied).toBe(0);
    expect(r.figures.settled).toBe(true);
  });

  it("2. the relay loses the broker mid-batch: no event lost, each aggregate in order", {
    timeout: 120_000,
  }, async () => {
    const r = await relayLosesBroker(ctx, { aggregates: 8, versions: 5 });
    expectContract(r);
    expect(r.figures.aggregatesOutOfOrder).toBe(0);
  });

  it("3. poison under load: poison parked with context, every good order processed", {
    timeout: 150_000,
  }, async () => {
    const r = await poisonUnderLoad(ctx, { orders: 100, poisonRate: 0.06 });
    expectContract(r);
    expect(r.figures.poisonParkedCorrectly).toBe(true);
    expect(typeof r.figures.throughputDropPercent).toBe("number");
  });

  // Each rebalance on the Kafka mock waits one session (10 s); a run takes 30-45 s.
  it("4. a broker stops while consumers rebalance: no loss", { timeout: 200_000 }, async () => {
    const r = await brokerDownDuringRebalance(ctx, { events: 150 });
    expectContract(r);
  });

  it("5. random SDK faults and handler crashes: no loss, no transactional duplicate, repeats explained", {
    timeout: 240_000,
  }, async () => {
    const r = await randomFaults(ctx, { orders: 60, rate: 0.05, crashRate: 0.03, longJobs: 2 });
    expect(r.figures.longJobsDone).toBe(2);
    expectContract(r);
    expect(r.figures.duplicateEffects).toBe(0);
  });

  it("6. the bad-input corpus through the running service: each parked with its typed error, good ones processed", {
    timeout: 150_000,
  }, async () => {
    const r = await badInputsThroughService(ctx);
    expectContract(r);
    expect(r.figures.wrongOutcomes).toBe(0);
    expect(r.figures.dlq).toBe(r.figures.expectedParked);
  });

  it("7. the relay's stream mapping gives up while the brokers are away: nothing lost, each aggregate in order", {
    timeout: 240_000,
  }, async () => {
    const r = await relayGivesUp(ctx, { aggregates: 5, versions: 4 });
    expectContract(r);
    expect(r.figures.droppedByMapping).toBeGreaterThan(0);
    expect(r.figures.aggregatesOutOfOrder).toBe(0);
  });
});
