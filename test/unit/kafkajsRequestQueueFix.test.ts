import { afterEach, describe, expect, it } from "vitest";
import "../../lib/kafka/kafkajsRequestQueueFix.ts";
import RequestQueue from "kafkajs/src/network/requestQueue/index.js";

// kafkajs 2.2.4 (tulios/kafkajs#1751): after every response, RequestQueue.scheduleCheckPendingRequests
// hands `throttledUntil - Date.now()` (= -1 - now) to setTimeout, so Node >= 23 prints
// TimeoutNegativeWarning and, with nothing pending, the queue re-arms a 1 ms timer for ever.

const silentLogger = { debug() {}, info() {}, warn() {}, error() {} };
function newQueue() {
  return new RequestQueue({
    instrumentationEmitter: { emit() {} },
    maxInFlightRequests: 1,
    requestTimeout: 10_000,
    enforceRequestTimeout: false,
    clientId: "t",
    broker: "127.0.0.1:1",
    logger: silentLogger,
    isConnected: () => true,
  });
}

const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);
afterEach(() => {
  process.off("warning", onWarning);
  warnings.length = 0;
});

const nextTicks = () => new Promise((r) => setTimeout(r, 20));

describe("kafkajs RequestQueue fix (TimeoutNegativeWarning)", () => {
  it("runs on a Node that warns about negative timeouts", () => {
    expect(
      Number(process.versions.node.split(".")[0]),
      "needs Node >= 23 (npm ci installs node 24)",
    ).toBeGreaterThanOrEqual(23);
  });

  it("arms no timer, and prints no warning, when nothing is pending", async () => {
    process.on("warning", onWarning);
    const queue = newQueue();
    queue.checkPendingRequests(); // what fulfillRequest does after every response
    expect(queue.throttleCheckTimeoutId).toBeFalsy();
    await nextTicks();
    queue.destroy();
    expect(warnings.filter((w) => w.name === "TimeoutNegativeWarning")).toEqual([]);
  });

  it("still wakes pending requests when a broker throttle ends", async () => {
    process.on("warning", onWarning);
    const queue = newQueue();
    const sent: number[] = [];
    queue.maybeThrottle(30);
    queue.push({
      entry: { correlationId: 1, resolve() {}, reject() {} },
      expectResponse: false,
      sendRequest: () => sent.push(1),
    });
    expect(sent).toEqual([]); // throttled: queued
    expect(queue.throttleCheckTimeoutId).toBeTruthy();
    await new Promise((r) => setTimeout(r, 80));
    expect(sent).toEqual([1]);
    queue.destroy();
    expect(warnings.filter((w) => w.name === "TimeoutNegativeWarning")).toEqual([]);
  });
});
