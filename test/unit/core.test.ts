import { classifyError, InvalidJsonError, PermanentError, TransientError } from "reliable-consumers";
import { describe, expect, it } from "vitest";
import { runKeyed } from "../../lib/batch/keyedScheduler.ts";
import { resolveDedupKey } from "../../lib/core/envelope.ts";
import { KeyReuseError, LeaseLostError } from "../../lib/core/errors.ts";
import { contextToHeaders, failureContext } from "../../lib/core/failureContext.ts";
import { decideRejectedClaim } from "../../lib/dedup/dedupDecision.ts";
import { packAttributes, unpackAttributes } from "../../lib/sqs/attributePacking.ts";
import { fullJitterDelaySeconds } from "../../lib/sqs/backoff.ts";

describe("fullJitterDelaySeconds", () => {
  const policy = { baseSeconds: 2, maxSeconds: 60 };
  it("grows the ceiling exponentially and caps it", () => {
    expect(fullJitterDelaySeconds(1, policy, () => 1)).toBe(2);
    expect(fullJitterDelaySeconds(3, policy, () => 1)).toBe(8);
    expect(fullJitterDelaySeconds(10, policy, () => 1)).toBe(60);
    expect(fullJitterDelaySeconds(1_000, policy, () => 1)).toBe(60);
  });
  it("draws uniformly below the ceiling (full jitter)", () => {
    expect(fullJitterDelaySeconds(4, policy, () => 0)).toBe(0);
    expect(fullJitterDelaySeconds(4, policy, () => 0.5)).toBe(8);
  });
});

describe("resolveDedupKey", () => {
  it("prefers the business key, then the producer's message-id, then broker coordinates", () => {
    expect(resolveDedupKey("order-1", { "message-id": "m" }, "b")).toEqual({
      id: "order-1",
      idSource: "business",
    });
    expect(resolveDedupKey(undefined, { "message-id": "m" }, "b")).toEqual({ id: "m", idSource: "producer" });
    expect(resolveDedupKey(undefined, {}, "b")).toEqual({ id: "b", idSource: "broker" });
  });
});

describe("decideRejectedClaim", () => {
  const now = 1_000_000;
  const base = {
    leaseExpiresAtMs: undefined,
    expiresAtSec: now / 1000 + 100,
    payloadHash: undefined,
    result: undefined,
  };
  it("a completed item is a duplicate, with its stored result", () => {
    expect(decideRejectedClaim({ ...base, status: "COMPLETED", result: "r" }, undefined, now)).toEqual({
      outcome: "duplicate",
      result: "r",
    });
  });
  it("a live lease is in progress; an expired one or an expired TTL means try again", () => {
    expect(
      decideRejectedClaim({ ...base, status: "IN_PROGRESS", leaseExpiresAtMs: now + 5 }, undefined, now)
        .outcome,
    ).toBe("in-progress");
    expect(
      decideRejectedClaim({ ...base, status: "IN_PROGRESS", leaseExpiresAtMs: now - 5 }, undefined, now)
        .outcome,
    ).toBe("retry");
    expect(
      decideRejectedClaim({ ...base, status: "COMPLETED", expiresAtSec: now / 1000 - 1 }, undefined, now)
        .outcome,
    ).toBe("retry");
    expect(decideRejectedClaim(undefined, undefined, now).outcome).toBe("retry");
  });
  it("a live lease under the claim's own delivery is in progress too, and says so (issue 34 item 10)", () => {
    const live = {
      ...base,
      status: "IN_PROGRESS" as const,
      leaseExpiresAtMs: now + 5,
      delivery: "orders:0:5",
    };
    expect(decideRejectedClaim(live, undefined, now, "orders:0:5")).toEqual({
      outcome: "in-progress",
      leaseExpiresAtMs: now + 5,
      sameDelivery: true,
    });
    expect(decideRejectedClaim(live, undefined, now, "orders:0:6")).toMatchObject({ sameDelivery: false });
    expect(decideRejectedClaim(live, undefined, now)).toMatchObject({ sameDelivery: false });
  });
  it("a delivery that routed the key before is answered with the route, whatever holds it now; others retry", () => {
    const routed = { ...base, routedBy: ["orders:0:5"], route: "r" };
    for (const status of ["ROUTED", "IN_PROGRESS"] as const)
      expect(
        decideRejectedClaim({ ...routed, status, leaseExpiresAtMs: now + 5 }, undefined, now, "orders:0:5"),
      ).toEqual({ outcome: "routed", route: "r" });
    expect(decideRejectedClaim({ ...routed, status: "ROUTED" }, undefined, now, "orders:0:6").outcome).toBe(
      "retry",
    );
    expect(decideRejectedClaim({ ...routed, status: "ROUTED" }, undefined, now).outcome).toBe("retry");
    // Done is done, for every delivery.
    expect(
      decideRejectedClaim({ ...routed, status: "COMPLETED" }, undefined, now, "orders:0:5").outcome,
    ).toBe("duplicate");
  });
  it("a different payload hash is key reuse", () => {
    expect(decideRejectedClaim({ ...base, status: "COMPLETED", payloadHash: "a" }, "b", now)).toEqual({
      outcome: "key-reuse",
      storedHash: "a",
      givenHash: "b",
    });
  });
});

describe("errors", () => {
  it("classifies permanent and transient errors; unknown errors are transient", () => {
    expect(classifyError(new PermanentError("x"))).toBe("permanent");
    expect(classifyError(new InvalidJsonError("x"))).toBe("permanent");
    expect(classifyError(new KeyReuseError("x"))).toBe("permanent");
    expect(classifyError(new TransientError("x"))).toBe("transient");
    expect(classifyError(new LeaseLostError("x"))).toBe("transient");
    expect(classifyError(new Error("x"))).toBe("transient");
    expect(classifyError({ kind: "permanent" })).toBe("permanent");
    expect(new InvalidJsonError("x").name).toBe("InvalidJsonError");
  });
});

describe("failure context", () => {
  it("carries the first failure time over and renders the DESIGN.md header names", () => {
    const ctx = failureContext({
      error: new InvalidJsonError("bad"),
      messageId: "m1",
      consumer: "orders",
      retryCount: 2,
      previousFirstFailedAt: "2026-01-01T00:00:00.000Z",
      originalTopic: "orders",
      originalPartition: 3,
      originalOffset: "42",
    });
    expect(contextToHeaders(ctx)).toEqual({
      "x-original-topic": "orders",
      "x-original-partition": "3",
      "x-original-offset": "42",
      "x-retry-count": "2",
      "x-first-failed-at": "2026-01-01T00:00:00.000Z",
      "x-last-error": "InvalidJsonError: bad",
      "x-message-id": "m1",
      "x-consumer": "orders",
    });
  });
});

describe("packAttributes", () => {
  const attr = (v: string) => ({ DataType: "String", StringValue: v });
  it("adds one context attribute when there is room, keeping the user's", () => {
    const packed = packAttributes({ a: attr("1") }, { "x-retry-count": "0" });
    expect(Object.keys(packed)).toEqual(["a", "x-failure-context"]);
    expect(unpackAttributes(packed)).toEqual({
      attributes: { a: attr("1") },
      context: { "x-retry-count": "0" },
    });
  });
  it("folds all ten user attributes with the context, and unfolds them intact", () => {
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, attr(String(i))]));
    const packed = packAttributes(ten, { "x-retry-count": "1" });
    expect(Object.keys(packed)).toHaveLength(1);
    expect(unpackAttributes(packed)).toEqual({ attributes: ten, context: { "x-retry-count": "1" } });
  });
});

describe("runKeyed", () => {
  const tick = () => new Promise((r) => setImmediate(r));

  it("keeps each key's order, runs keys side by side, and bounds concurrency", async () => {
    let running = 0;
    let peak = 0;
    const log: string[] = [];
    const task = (key: string | undefined, id: string) => ({
      key,
      run: async () => {
        running++;
        peak = Math.max(peak, running);
        await tick();
        log.push(id);
        running--;
        return id;
      },
    });
    const out = await runKeyed(
      [
        task("a", "a1"),
        task("b", "b1"),
        task("a", "a2"),
        task(undefined, "u1"),
        task("b", "b2"),
        task("a", "a3"),
      ],
      { concurrency: 2 },
    );
    expect(out.map((o) => (o.status === "fulfilled" ? o.value : o.status))).toEqual([
      "a1",
      "b1",
      "a2",
      "u1",
      "b2",
      "a3",
    ]);
    expect(log.filter((id) => id.startsWith("a"))).toEqual(["a1", "a2", "a3"]);
    expect(log.filter((id) => id.startsWith("b"))).toEqual(["b1", "b2"]);
    expect(peak).toBe(2);
  });

  it("skips a key's later tasks after a failure, but not other keys'", async () => {
    const out = await runKeyed([
      { key: "a", run: async () => 1 },
      { key: "a", run: async () => Promise.reject(new Error("boom")) },
      { key: "b", run: async () => 3 },
      { key: "a", run: async () => 4 },
    ]);
    expect(out.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "skipped"]);
    expect(out[3]).toEqual({ status: "skipped", reason: "key-failed" });
  });

  it("stops starting tasks once canStart says no", async () => {
    let started = 0;
    const out = await runKeyed(
      Array.from({ length: 5 }, () => ({ key: undefined, run: async () => ++started })),
      { concurrency: 1, canStart: () => started < 2 },
    );
    expect(out.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "skipped", "skipped", "skipped"]);
  });

  it("gives a slot to a lane whose first task is ready, not to one still waiting (its claim)", async () => {
    let claimA!: () => void;
    const aReady = new Promise<void>((r) => (claimA = r));
    const log: string[] = [];
    const task = (key: string | undefined, id: string, ready?: Promise<unknown>) => ({
      key,
      ...(ready ? { ready } : {}),
      run: async () => {
        log.push(id);
        // The last ready task lets the first lane's claim come back.
        if (id === "u1") claimA();
        return id;
      },
    });
    const out = await runKeyed(
      [
        task("a", "a1", aReady),
        task("a", "a2"),
        task("b", "b1", Promise.resolve()),
        task(undefined, "u1"),
        // A rejected readiness is ready too: the task's own run sees the failure.
        task("c", "c1", Promise.reject(new Error("claim failed"))),
      ],
      { concurrency: 1 },
    );
    // u1 (ready at once) first, then in the order readiness settled; a's lane keeps its order.
    expect(log).toEqual(["u1", "b1", "c1", "a1", "a2"]);
    expect(out.map((o) => o.status)).toEqual(Array(5).fill("fulfilled"));
  });

  it("runs every task once, keys in order and within the bound, whatever order readiness comes in", async () => {
    // Readiness settles after 0–3 turns of the event loop, in an order unrelated to the tasks'.
    const turns = (n: number) =>
      Array.from({ length: n }).reduce<Promise<unknown>>((p) => p.then(tick), Promise.resolve());
    let running = 0;
    let peak = 0;
    const log: string[] = [];
    const tasks = Array.from({ length: 200 }, (_, i) => ({
      key: i % 3 === 0 ? undefined : `k${i % 11}`,
      ready: turns((i * 7) % 4),
      run: async () => {
        running++;
        peak = Math.max(peak, running);
        await tick();
        log.push(String(i));
        running--;
        return i;
      },
    }));
    const out = await runKeyed(tasks, { concurrency: 7 });
    expect(out.map((o) => (o.status === "fulfilled" ? o.value : -1))).toEqual(tasks.map((_, i) => i));
    expect(log).toHaveLength(200);
    expect(peak).toBe(7);
    for (let k = 0; k < 11; k++) {
      const ofKey = log.map(Number).filter((i) => i % 3 !== 0 && i % 11 === k);
      expect(ofKey).toEqual([...ofKey].sort((x, y) => x - y));
    }
  });
});
