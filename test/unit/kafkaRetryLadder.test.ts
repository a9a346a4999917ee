import { createRetryLadder, ladderFromRuntimeConfig } from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";
import {
  dueDecision,
  formatDelay,
  ladderTopics,
  parseDelay,
  routeFailure,
  topicRole,
} from "../../lib/kafka/retryLadder.ts";

const ladder = createRetryLadder();

describe("retry ladder", () => {
  it("parses and formats delays exactly", () => {
    expect(["250ms", "5s", "1m", "10m", "1h", "2d"].map(parseDelay)).toEqual([
      250, 5_000, 60_000, 600_000, 3_600_000, 172_800_000,
    ]);
    expect([250, 5_000, 60_000, 600_000, 90_000, 1_500].map(formatDelay)).toEqual([
      "250ms",
      "5s",
      "1m",
      "10m",
      "90s",
      "1500ms",
    ]);
    expect(() => parseDelay("5 minutes")).toThrow(RangeError);
    expect(() => parseDelay(0)).toThrow(RangeError);
    expect(() => parseDelay("0s")).toThrow(RangeError);
  });

  it("names the default ladder 5s → 1m → 10m → DLQ", () => {
    expect(ladderTopics(ladder, "orders")).toEqual({
      retry: ["orders.retry.5s", "orders.retry.1m", "orders.retry.10m"],
      deadLetter: "orders.DLQ",
    });
  });

  it("climbs one rung per transient failure, then dead-letters", () => {
    const steps = [0, 1, 2, 3].map((previousRetryCount) =>
      routeFailure({ ladder, baseTopic: "orders", previousRetryCount, errorKind: "transient" }),
    );
    expect(steps).toEqual([
      { kind: "retry", topic: "orders.retry.5s", retryCount: 1, delayMs: 5_000 },
      { kind: "retry", topic: "orders.retry.1m", retryCount: 2, delayMs: 60_000 },
      { kind: "retry", topic: "orders.retry.10m", retryCount: 3, delayMs: 600_000 },
      { kind: "dead-letter", topic: "orders.DLQ", retryCount: 4, reason: "exhausted" },
    ]);
  });

  it("sends a permanent error straight to the DLQ from any rung", () => {
    for (const previousRetryCount of [0, 2]) {
      expect(
        routeFailure({ ladder, baseTopic: "orders", previousRetryCount, errorKind: "permanent" }),
      ).toEqual({
        kind: "dead-letter",
        topic: "orders.DLQ",
        retryCount: previousRetryCount + 1,
        reason: "permanent",
      });
    }
  });

  it("treats a garbage retry count as 0 and an empty ladder as DLQ-only", () => {
    expect(
      routeFailure({ ladder, baseTopic: "t", previousRetryCount: Number.NaN, errorKind: "transient" }),
    ).toMatchObject({ topic: "t.retry.5s", retryCount: 1 });
    const none = createRetryLadder({ delays: [] });
    expect(
      routeFailure({ ladder: none, baseTopic: "t", previousRetryCount: 0, errorKind: "transient" }),
    ).toMatchObject({ kind: "dead-letter", reason: "exhausted" });
  });

  it("lets rungs share a delay (and a topic)", () => {
    const repeat = createRetryLadder({ delays: ["5s", "5s", "1m"] });
    expect(ladderTopics(repeat, "p").retry).toEqual(["p.retry.5s", "p.retry.1m"]);
    expect(
      routeFailure({ ladder: repeat, baseTopic: "p", previousRetryCount: 1, errorKind: "transient" }),
    ).toMatchObject({ topic: "p.retry.5s", retryCount: 2 });
  });

  it("reads the CDK's KAFKA_RETRY_LADDER and refuses a ladder that drifted from its topics", () => {
    const env = {
      topic: "order-events",
      retries: [
        { topic: "order-events.retry.5s", delayMs: 5_000 },
        { topic: "order-events.retry.1m", delayMs: 60_000 },
        { topic: "order-events.retry.24h", delayMs: 86_400_000 },
      ],
      deadLetterTopic: "order-events.DLQ",
    };
    expect(ladderFromRuntimeConfig(JSON.stringify(env)).delaysMs).toEqual([5_000, 60_000, 86_400_000]);
    expect(() =>
      ladderFromRuntimeConfig({ ...env, retries: [{ topic: "order-events.retry.5sec", delayMs: 5_000 }] }),
    ).toThrow(/≠/);
    expect(() => ladderFromRuntimeConfig({ ...env, deadLetterTopic: "dlq" })).toThrow(/dead-letter/);
    expect(() => ladderFromRuntimeConfig("{}")).toThrow(/KAFKA_RETRY_LADDER/);
  });

  it("recognises topic roles only for the ladder's own delays", () => {
    expect(topicRole(ladder, "orders")).toEqual({ kind: "main", baseTopic: "orders" });
    expect(topicRole(ladder, "orders.retry.1m")).toEqual({
      kind: "retry",
      baseTopic: "orders",
      delayMs: 60_000,
    });
    expect(topicRole(ladder, "orders.retry.7s")).toEqual({ kind: "main", baseTopic: "orders.retry.7s" });
    expect(topicRole(ladder, "orders.DLQ")).toEqual({ kind: "dead-letter", baseTopic: "orders" });
    expect(topicRole(ladder, "a.retry.b.retry.5s")).toEqual({
      kind: "retry",
      baseTopic: "a.retry.b",
      delayMs: 5_000,
    });
  });

  it("waits for a due time only within the invocation's remaining time", () => {
    const base = { recordTimestampMs: 1_000, delayMs: 5_000, reserveMs: 2_000 };
    expect(dueDecision({ ...base, nowMs: 6_000, remainingMs: 10_000 })).toEqual({ kind: "due" });
    expect(dueDecision({ ...base, nowMs: 3_000, remainingMs: 10_000 })).toEqual({
      kind: "wait",
      waitMs: 3_000,
    });
    expect(dueDecision({ ...base, nowMs: 3_000, remainingMs: 4_000 })).toEqual({
      kind: "not-yet",
      dueAtMs: 6_000,
    });
    expect(dueDecision({ ...base, nowMs: 3_000, remainingMs: 60_000, maxWaitMs: 1_000 })).toEqual({
      kind: "not-yet",
      dueAtMs: 6_000,
    });
  });
});

describe("routeFailure for a contended key (leased by another consumer)", () => {
  it("goes back onto the ladder without using up an attempt, and never reaches the dead-letter topic", () => {
    const contended = (previousRetryCount: number) =>
      routeFailure({ ladder, baseTopic: "orders", previousRetryCount, errorKind: "contended" });
    expect(contended(0)).toEqual({ kind: "retry", topic: "orders.retry.5s", retryCount: 0, delayMs: 5_000 });
    expect(contended(1)).toMatchObject({ kind: "retry", topic: "orders.retry.1m", retryCount: 1 });
    // Past the last rung a transient failure is dead-lettered; a contended record waits on the last rung.
    expect(
      routeFailure({ ladder, baseTopic: "orders", previousRetryCount: 3, errorKind: "transient" }).kind,
    ).toBe("dead-letter");
    expect(contended(3)).toMatchObject({ kind: "retry", topic: "orders.retry.10m", retryCount: 3 });
  });
});
