import RequestQueue from "kafkajs/src/network/requestQueue/index.js";
// The other kafkajs fix goes wherever this one does (every importer of this module needs both).
import "./kafkajsStoppedFetcherFix.ts";

/**
 * A fix for kafkajs 2.2.4's request queue (tulios/kafkajs#1751, still open; kafkajs has had no
 * release since 2023). After every response, `scheduleCheckPendingRequests` passes
 * `throttledUntil - Date.now()` to `setTimeout`; `throttledUntil` starts at -1, so the delay is
 * about minus the epoch: Node >= 23 prints `TimeoutNegativeWarning` and waits 1 ms, and with nothing
 * pending the callback re-arms the same 1 ms timer, so every idle connection polls every
 * millisecond until it is closed.
 *
 * The fix arms the timer only when a request is waiting (only `push` adds one, and it calls this
 * method), and then waits for the throttle to end or, once it has, the queue's usual 10 ms. That is
 * the behaviour the upstream discussion converged on (tulios/kafkajs#1768 and its review).
 *
 * It patches the class's prototype when this module is first imported. `producer.ts` imports it,
 * so it is in every bundle that uses the library's Kafka client: esbuild resolves this import and
 * kafkajs's own `require("./requestQueue")` to the same file, hence the same class, which a patch
 * of this repository's node_modules would not reach.
 */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10; // kafkajs's own constant in requestQueue/index.js

const FIXED = Symbol.for("reliable-consumers.kafkajsRequestQueueFix");
type Patched = typeof RequestQueue.prototype & { [FIXED]?: true };
const proto = RequestQueue.prototype as Patched;

if (!proto[FIXED]) {
  proto.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueue) {
    if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
    const untilThrottleEnds = this.throttledUntil - Date.now();
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      untilThrottleEnds > 0 ? untilThrottleEnds : CHECK_PENDING_REQUESTS_INTERVAL_MS,
    );
  };
  proto[FIXED] = true;
}

/** True once the fix is applied (it is, as soon as this module is imported). */
export const kafkajsRequestQueueFixed = (): boolean => proto[FIXED] === true;
