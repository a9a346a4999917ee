import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { badInputsThroughService } from "../../chaos/badInputScenario.ts";
import { leadersMove, oneBrokerDown, twoBrokersDown } from "../../chaos/brokerScenarios.ts";
import { chaosDenials, disposeChaosApp, synthesizeChaosApp } from "../../chaos/chaosService.ts";
import { recordKillsItsFunction } from "../../chaos/crashScenario.ts";
import {
  kinesisCrashMidBatch,
  kinesisPoisonUnderLoad,
  kinesisReshard,
} from "../../chaos/kinesisScenarios.ts";
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
import { type KafkaCluster, startKafkaCluster } from "../../local/src/services/kafka/cluster.ts";

/**
 * The chaos scenarios of `npm run chaos`, small: the reference stack's chaos variant synthesized
 * once, each scenario on the local runtime against the shared emulators (scenario 1 kills and
 * restarts a DynamoDB Local of its own) and a real 3-broker Kafka cluster of this file's own (RF 3,
 * min.insync.replicas 2), whose brokers scenarios 4, 8, 9 and 10 stop and re-lead; scenario 11
 * kills the payment environment whenever one record is charged. Each asserts the run's contract on what was stored:
 * nothing lost, no duplicate effect on the transactional path, every repeated charge explained by
 * an injected crash, nothing half-applied, aggregates in order, every bad input parked with its
 * typed error. Bounded: ~5 minutes in all.
 */
let ctx: ScenarioContext;
let cluster: KafkaCluster | undefined;

// The reference stack's chaos variant, synthesized (and bundled) once for every scenario, and the
// 3-broker cluster, started meanwhile.
beforeAll(async () => {
  const [assembly, kafka] = await Promise.all([synthesizeChaosApp(), startKafkaCluster({ brokers: 3 })]);
  cluster = kafka;
  ctx = {
    endpoints: {
      dynamodb: process.env.AWS_ENDPOINT_URL_DYNAMODB!,
      sqs: process.env.AWS_ENDPOINT_URL_SQS!,
      kafkaBrokers: kafka.brokers,
      kinesis: process.env.AWS_ENDPOINT_URL_KINESIS!,
    },
    kafkaCluster: kafka,
    seed: Number(process.env.CHAOS_SEED ?? 20261130),
    // CHAOS_VERBOSE=1 prints what each scenario does (its faults, its waits).
    log: process.env.CHAOS_VERBOSE ? (line: string) => console.error(line) : () => {},
    settleTimeoutMs: 150_000,
    assembly,
  };
}, 240_000);
afterAll(async () => {
  disposeChaosApp(ctx?.assembly);
  await cluster?.stop();
});

// The denials of the scenario at hand (the list is the whole run's).
let deniedBefore = 0;
beforeEach(() => {
  deniedBefore = chaosDenials().length;
});

function expectContract(r: ScenarioResult) {
  const v = verdict([r], chaosDenials().slice(deniedBefore));
  expect(v.reasons, JSON.stringify({ figures: r.figures, details: r.details }).slice(0, 3000)).toEqual([]);
  expect(r.figures.faultsInjected).toBeGreaterThan(0);
}

describe.sequential("chaos scenarios (small)", () => {
  it("1. the database dies mid-transaction: nothing half-applied, every order processed", {
    timeout: 150_000,
  }, async () => {
    const r = await databaseDies(ctx, { orders: 60, kills: 1 });
    expectContract(r);
    // The database died under running order-consumer invocations (brought about, not hoped for).
    expect(r.figures.ordersInFlightAtKill).toBeGreaterThan(0);
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

  it("4. a broker process dies while consumers rebalance, another shuts down as one leaves: no loss", {
    timeout: 200_000,
  }, async () => {
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

  it("8. one broker of three down: acks=all still succeeds, nothing lost", { timeout: 200_000 }, async () => {
    const r = await oneBrokerDown(ctx, { orders: 40 });
    expectContract(r);
    expect(r.figures.acksAllWithOneDown).toBe(true);
    expect(r.figures.settled).toBe(true);
  });

  it("9. two brokers down: NOT_ENOUGH_REPLICAS; relay and retry ladder hold everything, in order, and recover", {
    timeout: 240_000,
  }, async () => {
    const r = await twoBrokersDown(ctx, { aggregates: 5, versions: 4, orders: 12, outageMs: 10_000 });
    expectContract(r);
    expect(r.figures.acksAllRefusedWithTwoDown).toBe(true);
    expect(r.figures.publishedDuringOutage).toBe(0);
    expect(r.figures.acksAllAfterOneReturned).toBe(true);
    expect(r.figures.aggregatesOutOfOrder).toBe(0);
  });

  it("10. partition leaders move while the payment consumer runs: every order charged once", {
    timeout: 200_000,
  }, async () => {
    const r = await leadersMove(ctx, { events: 80 });
    expectContract(r);
    expect(r.figures.leaderMoves).toBeGreaterThan(0);
  });

  it("11. a record kills its function on every charge: Lambda isolates it to the DLQ topic, its partition goes on", {
    timeout: 240_000,
  }, async () => {
    const r = await recordKillsItsFunction(ctx, { orders: 30, crashers: 1 });
    expectContract(r);
    expect(r.figures.crashersOnDlqByLambda).toBe(1);
    expect(r.figures.crashersNotReplayable).toBe(0);
    expect(r.figures.settled).toBe(true);
  });

  it("12. poison in a Kinesis shard under load: each parked with its context, the shard goes on, every key in order", {
    timeout: 150_000,
  }, async () => {
    const r = await kinesisPoisonUnderLoad(ctx, { customers: 12, versions: 6, poison: 4 });
    expectContract(r);
    expect(r.figures.poisonParkedCorrectly).toBe(true);
    expect(r.figures.keysOutOfOrder).toBe(0);
    expect(r.figures.shards).toBe(2);
  });

  it("13. a shard split, then merged, while producers write: every key in order across parents and children", {
    timeout: 180_000,
  }, async () => {
    const r = await kinesisReshard(ctx, { customers: 12, versions: 9 });
    expectContract(r);
    expect(r.figures.splits).toBe(1);
    expect(r.figures.merges).toBe(1);
    expect(r.figures.recordsOnChildren).toBeGreaterThan(0);
    expect(r.figures.recordsOnMerged).toBeGreaterThan(0);
    expect(r.figures.keysOutOfOrder).toBe(0);
  });

  it("14. the Kinesis consumer crashes mid-batch: bisected out, the crasher on the destination, every other effect once", {
    timeout: 240_000,
  }, async () => {
    const r = await kinesisCrashMidBatch(ctx, { customers: 8, versions: 6, always: 1, once: 1 });
    expectContract(r);
    expect(r.figures.crashersIsolated).toBe(1);
    expect(r.figures.onceCrashersApplied).toBe(1);
    expect(r.figures.keysOutOfOrder).toBe(0);
  });
});
