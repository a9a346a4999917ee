/** The shared batch stages in lib/core, with no AWS: plans, copies, lanes, leases, answers, errors. */
import { setTimeout as sleep } from "node:timers/promises";
import * as api from "reliable-consumers";
import { PermanentError, TransientError } from "reliable-consumers";
import { KAFKA_CONSUMER_DEFAULTS } from "reliable-consumers/kafka";
import { SQS_CONSUMER_DEFAULTS } from "reliable-consumers/sqs";
import { describe, expect, it } from "vitest";
import { decodeRecords, findInBatchCopies, planBatch, unfinishedOf } from "../../lib/batch/batchPlan.ts";
import { runKeyed } from "../../lib/batch/keyedScheduler.ts";
import {
  ANSWER_MARGIN_MS,
  beforeDeadline,
  LAMBDA_DEADLINE,
  lambdaDeadline,
} from "../../lib/batch/lambdaDeadline.ts";
import {
  done,
  outcomeOfTask,
  type RecordOutcome,
  stopsLane,
  unfinished,
} from "../../lib/batch/recordOutcome.ts";
import { readConsumerEnv } from "../../lib/core/consumerEnv.ts";
import { withDefaults } from "../../lib/core/defaults.ts";
import * as coreErrors from "../../lib/core/errors.ts";
import {
  HeldBackError,
  InProgressElsewhereError,
  LeaseLostError,
  OutOfTimeError,
  RecordTimeoutError,
  SettlementTimeoutError,
} from "../../lib/core/errors.ts";
import {
  checkIntervalMs,
  keepLease,
  LEASE_CADENCE,
  renewalDue,
  renewIfAged,
} from "../../lib/core/leaseKeeper.ts";
import * as kafkaErrors from "../../lib/kafka/errors.ts";
import { createLaneGate } from "../../lib/kafka/keyLanes.ts";
import * as outboxErrors from "../../lib/outbox/errors.ts";
import * as sqsErrors from "../../lib/sqs/errors.ts";
import { atLastReceive, sqsAnswer } from "../../lib/sqs/sqsAnswer.ts";
import { SQS_ENVELOPE_DEFAULTS, toSqsEnvelope } from "../../lib/sqs/sqsEnvelope.ts";
import { manualClock } from "../support/manualClock.ts";

const env = (id: string, raw: string) => ({ id, raw });

describe("in-batch copies", () => {
  it("tells a copy (same payload) from a same-id record with another payload", () => {
    expect(
      findInBatchCopies([
        env("a", "1"),
        env("b", "2"),
        env("a", "1"),
        undefined,
        env("a", "9"),
        env("b", "2"),
      ]),
    ).toEqual([
      { kind: "first" },
      { kind: "first" },
      { kind: "copy", of: 0 },
      { kind: "first" },
      { kind: "other-payload", of: 0 },
      { kind: "copy", of: 1 },
    ]);
  });

  it("plans one object per record, with the decode result, the copy and a signal", async () => {
    const decoded = await decodeRecords(["x", "bad", "x"], async (r) => {
      if (r === "bad") throw new PermanentError("nope");
      return {
        id: r,
        idSource: "business",
        key: undefined,
        body: r,
        raw: r,
        headers: {},
        attempt: 1,
        source: { kind: "sqs", queueArn: "q", messageId: r },
      } as const;
    });
    const deadline = new AbortController();
    const plans = planBatch(["x", "bad", "x"], decoded, deadline.signal);
    expect(plans.map((p) => [p.index, p.decoded.ok, p.copy.kind])).toEqual([
      [0, true, "first"],
      [1, false, "first"],
      [2, true, "copy"],
    ]);
    expect(plans[1]!.decoded.ok ? undefined : plans[1]!.decoded.error).toBeInstanceOf(PermanentError);
    // A lost lease aborts one record; the deadline aborts them all.
    plans[0]!.abort.abort(new LeaseLostError("lost"));
    expect(plans.map((p) => p.signal.aborted)).toEqual([true, false, false]);
    deadline.abort(new OutOfTimeError("late"));
    expect(plans.map((p) => p.signal.aborted)).toEqual([true, true, true]);
  });
});

describe("lanes: an unfinished record stops its lane, without a throw", () => {
  it("skips the later records of a FIFO group behind an unfinished one; other groups go on", async () => {
    const ran: string[] = [];
    const task = (key: string, name: string, outcome: RecordOutcome) => ({
      key,
      run: async () => {
        ran.push(name);
        return outcome;
      },
    });
    const results = await runKeyed(
      [
        task("g1", "a1", unfinished(new TransientError("down"))),
        task("g1", "a2", done("processed")),
        task("g2", "b1", done("processed")),
        task("g2", "b2", done("processed")),
      ],
      { concurrency: 1, stopsLane },
    );
    expect(ran).toEqual(["a1", "b1", "b2"]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "skipped", "fulfilled", "fulfilled"]);
    const held = outcomeOfTask(results[1]!);
    expect(held.kind === "unfinished" && held.error).toBeInstanceOf(HeldBackError);
  });

  it("gives a record skipped for time a typed OutOfTimeError; a rejected task (a bug) is never done", () => {
    const late = outcomeOfTask({ status: "skipped", reason: "out-of-time" });
    expect(late.kind === "unfinished" && late.error).toBeInstanceOf(OutOfTimeError);
    expect(outcomeOfTask({ status: "rejected", reason: new Error("bug") }).kind).toBe("unfinished");
  });

  it("a lane gate keeps the first record that blocked a Kafka key", () => {
    const gate = createLaneGate<string>();
    gate.block("p|k1", "retry-1");
    gate.block("p|k1", "retry-2");
    gate.block(undefined, "ignored");
    expect(gate.blockedBy("p|k1")).toBe("retry-1");
    expect(gate.blockedBy("p|k2")).toBeUndefined();
    expect(gate.blockedBy(undefined)).toBeUndefined();
  });
});

describe("lease cadence (one for SQS and Kafka)", () => {
  it("is due once less than half the granted length is left; checked every third", () => {
    expect(renewalDue({ expiresAtMs: 10_000 }, 3_000, 8_400)).toBe(false);
    expect(renewalDue({ expiresAtMs: 10_000 }, 3_000, 8_600)).toBe(true);
    expect(checkIntervalMs(3_000)).toBe(1_000);
    expect(checkIntervalMs(90)).toBe(100);
  });

  it("renews an aged claim before its effect, and leaves a fresh one alone", async () => {
    const renewed: number[] = [];
    const renew = async (l: { expiresAtMs: number }, ms: number) => {
      renewed.push(ms);
      return { expiresAtMs: l.expiresAtMs + ms };
    };
    expect(await renewIfAged({ expiresAtMs: 2_000 }, 2_000, renew, 500)).toEqual({ expiresAtMs: 2_000 });
    expect(await renewIfAged({ expiresAtMs: 2_000 }, 2_000, renew, 1_500)).toEqual({ expiresAtMs: 4_000 });
    expect(renewed).toEqual([2_000]);
  });

  it("keeps a lease alive and reports a lost one", async () => {
    let now = 0;
    let lost: unknown;
    let calls = 0;
    const keeper = keepLease({
      lease: { expiresAtMs: 300 },
      grantedMs: 300,
      now: () => now,
      isLost: (e) => e instanceof LeaseLostError,
      onLost: (e) => {
        lost = e;
      },
      renew: async (l) => {
        calls++;
        if (calls === 2) throw new LeaseLostError("taken");
        return { expiresAtMs: l.expiresAtMs + 300 };
      },
    });
    now = 200;
    await sleep(130);
    expect(keeper.current()).toEqual({ expiresAtMs: 600 });
    now = 500;
    await sleep(110);
    expect(lost).toBeInstanceOf(LeaseLostError);
    keeper.stop();
  });

  it("ignores a renewal that lands after stop(): no lost lease, no abort (issue 14 item 14)", async () => {
    let answer!: (error: unknown) => void;
    let lost = false;
    const keeper = keepLease({
      lease: { expiresAtMs: 0 },
      grantedMs: 300,
      now: () => 1,
      isLost: (e) => e instanceof LeaseLostError,
      onLost: () => {
        lost = true;
      },
      renew: () =>
        new Promise<{ expiresAtMs: number }>((_, reject) => {
          answer = reject;
        }),
    });
    await sleep(130); // the renewal is in flight
    keeper.stop(); // the record completed
    answer(new LeaseLostError("the item is COMPLETED now"));
    await sleep(10);
    expect(lost).toBe(false);
  });
});

describe("answers", () => {
  const rec = (id: string, arn = "arn:q") => ({
    messageId: id,
    receiptHandle: `rh-${id}`,
    eventSourceARN: arn,
  });

  it("SQS: unfinished records become item failures with their retry delay as visibility", () => {
    const plans = [
      { record: rec("1"), outcome: done("processed") },
      { record: rec("2"), outcome: unfinished(new TransientError("x"), 7) },
      { record: rec("3", "arn:other"), outcome: undefined },
      { record: rec("4"), outcome: done("requeued") },
    ];
    const answer = sqsAnswer(unfinishedOf(plans));
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: "2" }, { itemIdentifier: "3" }]);
    expect(Object.fromEntries(answer.visibility)).toEqual({
      "arn:q": [{ id: "2", receiptHandle: "rh-2", seconds: 7 }],
      "arn:other": [{ id: "3", receiptHandle: "rh-3", seconds: 0 }],
    });
  });

  it("SQS FIFO: the records held back behind a group's failed one are hidden at least as long as it; other groups keep their own", () => {
    const inGroup = (id: string, group: string) => ({ ...rec(id), group });
    const plans = [
      { record: inGroup("a1", "a"), outcome: done("processed") },
      { record: inGroup("a2", "a"), outcome: unfinished(new TransientError("x"), 30) },
      { record: inGroup("b1", "b"), outcome: unfinished(new TransientError("y"), 5) },
      { record: inGroup("a3", "a"), outcome: unfinished(new HeldBackError("behind a2")) },
      { record: inGroup("b2", "b"), outcome: unfinished(new TransientError("z"), 9) },
    ];
    const seconds = (groupOf?: (r: { group: string }) => string) =>
      sqsAnswer(unfinishedOf(plans), groupOf)
        .visibility.get("arn:q")!
        .map((v) => `${v.id}:${v.seconds}`);
    expect(seconds((r) => r.group)).toEqual(["a2:30", "b1:5", "a3:30", "b2:9"]);
    // A standard queue (a fair queue's group ids included) has no groups to hold back.
    expect(seconds()).toEqual(["a2:30", "b1:5", "a3:0", "b2:9"]);
  });

  it("on its last receive a healthy record is requeued (standard) or parked with context (FIFO), a failed one is left alone (issue 14 item 8)", () => {
    const held = unfinished(new InProgressElsewhereError("held"));
    const base = { receiveCount: 5, maxReceiveCount: 5, fifo: false };
    expect(atLastReceive({ ...base, outcome: held })).toBe("requeue");
    expect(atLastReceive({ ...base, outcome: unfinished(new HeldBackError("behind")) })).toBe("requeue");
    expect(atLastReceive({ ...base, outcome: unfinished(new OutOfTimeError("late")) })).toBe("requeue");
    expect(atLastReceive({ ...base, fifo: true, outcome: held })).toBe("park");
    expect(atLastReceive({ ...base, outcome: unfinished(new TransientError("down")) })).toBeUndefined();
    expect(atLastReceive({ ...base, outcome: done("processed") })).toBeUndefined();
    expect(atLastReceive({ ...base, receiveCount: 4, outcome: held })).toBeUndefined();
    expect(atLastReceive({ ...base, maxReceiveCount: undefined, outcome: held })).toBeUndefined();
  });
});

describe("defaults and environment, resolved once", () => {
  it("an option set to undefined keeps the default", () => {
    expect(withDefaults({ a: 1, b: 2 }, { a: undefined, b: 3, c: 4 })).toEqual({ a: 1, b: 3 });
  });

  it("reads the consumer's variables and refuses a window that is not whole seconds", () => {
    expect(
      readConsumerEnv({
        DEDUP_TABLE_NAME: "t",
        DEDUP_WINDOW_SECONDS: "60",
        CONSUMER_NAME: "orders",
        DLQ_URL: "",
      }),
    ).toEqual({ dedupTableName: "t", dedupWindowSeconds: 60, consumerName: "orders", dlqUrl: undefined });
    expect(() => readConsumerEnv({ DEDUP_WINDOW_SECONDS: "1.5" })).toThrow(/DEDUP_WINDOW_SECONDS/);
  });

  it("the Lambda deadlines: the run's at the settlement reserve, the cut-off halfway, the settlement's before Middy's", () => {
    // Issue 34 item 8: what comes after the run has Lambda time of its own.
    const clock = manualClock(30_000);
    const d = lambdaDeadline(clock.context(), undefined, { settleReserveMs: 3_000, timer: clock.timer });
    expect([d.run.aborted, d.cutOff.aborted, d.settle.aborted]).toEqual([false, false, false]);
    expect(clock.next().remainingMs).toBe(3_000);
    expect(d.run.reason).toBeInstanceOf(RecordTimeoutError);
    expect([d.cutOff.aborted, d.settle.aborted]).toEqual([false, false]);
    expect(clock.next().remainingMs).toBe(3_000 - (3_000 - ANSWER_MARGIN_MS) / 2);
    expect(d.cutOff.aborted).toBe(true);
    expect(clock.next().remainingMs).toBe(ANSWER_MARGIN_MS);
    expect(d.settle.reason).toBeInstanceOf(SettlementTimeoutError);
    expect(ANSWER_MARGIN_MS).toBeGreaterThan(LAMBDA_DEADLINE.middyEarlyMs);
    d.dispose();
  });

  it("a reserve below the answer margin keeps the margin; Middy's abort ends every phase at once", async () => {
    const clock = manualClock(10_000);
    const small = lambdaDeadline(clock.context(), undefined, { settleReserveMs: 0, timer: clock.timer });
    expect(clock.next().remainingMs).toBe(ANSWER_MARGIN_MS);
    expect([small.run.aborted, small.cutOff.aborted, small.settle.aborted]).toEqual([true, true, true]);
    const middy = new AbortController();
    const byMiddy = lambdaDeadline(manualClock(60_000).context(), middy.signal, { settleReserveMs: 3_000 });
    expect(byMiddy.run.aborted).toBe(false);
    middy.abort();
    expect([byMiddy.run.aborted, byMiddy.cutOff.aborted, byMiddy.settle.aborted]).toEqual([true, true, true]);
    byMiddy.dispose();
    // A settlement call still open at the deadline is given up with the deadline's reason.
    const settle = new AbortController();
    const open = beforeDeadline(new Promise(() => undefined), settle.signal);
    settle.abort(new SettlementTimeoutError("cut"));
    await expect(open).rejects.toBeInstanceOf(SettlementTimeoutError);
  });
});

describe("error names are literals (they survive a bundle minified without keepNames)", () => {
  const modules = { ...coreErrors, ...kafkaErrors, ...outboxErrors, ...sqsErrors };
  const classes = Object.entries(modules).filter(
    ([name, v]) => typeof v === "function" && /Error$/.test(name) && v.prototype instanceof Error,
  ) as Array<[string, new (message: string) => Error]>;

  it.each(classes.filter(([n]) => n !== "ConsumerError"))("%s", (name, Cls) => {
    // A minifier renames the class; `{ x: class extends Cls {} }.x` stands for that.
    const Renamed = { x: class extends Cls {} }.x;
    const args: unknown[] = ["m", [], []];
    const own = Reflect.construct(Cls, args) as Error;
    expect(own.name).toBe(name);
    expect((Reflect.construct(Renamed, args) as Error).name).toBe(
      name === "PermanentError" || name === "TransientError" ? "x" : name,
    );
  });

  it("a user's own subclass keeps its class name, and every error takes { cause }", () => {
    class CardDeclined extends PermanentError {}
    expect(new CardDeclined("no").name).toBe("CardDeclined");
    const cause = new Error("socket");
    expect(new HeldBackError("behind", { cause }).cause).toBe(cause);
  });
});

describe("SQS body limit (issue 14 item 12)", () => {
  const record = (body: string) =>
    ({
      messageId: "m",
      receiptHandle: "r",
      body,
      attributes: { ApproximateReceiveCount: "1" },
      messageAttributes: {},
      eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:q",
      eventSource: "aws:sqs",
    }) as never;

  it("accepts a body SQS accepts (up to 1 MiB) and parks only what is larger", async () => {
    const big = JSON.stringify({ pad: "x".repeat(900_000) });
    await expect(toSqsEnvelope(record(big), {})).resolves.toMatchObject({ raw: big });
    const tooBig = JSON.stringify({ pad: "x".repeat(1_048_576) });
    await expect(toSqsEnvelope(record(tooBig), {})).rejects.toMatchObject({ name: "PayloadTooLargeError" });
  });
});

describe("the public defaults and error types", () => {
  it("exports the defaults objects and the config error; the lease cadence and HeldBackError stay internal", () => {
    expect(SQS_CONSUMER_DEFAULTS.concurrency).toBe(50);
    expect(KAFKA_CONSUMER_DEFAULTS.concurrency).toBe(10);
    expect(SQS_ENVELOPE_DEFAULTS.maxBodyBytes).toBe(1_048_576);
    expect(LEASE_CADENCE.renewBelow).toBe(0.5);
    expect(new HeldBackError("x").kind).toBe("transient");
    expect(new api.ConsumerConfigError("x").name).toBe("ConsumerConfigError");
  });
});
