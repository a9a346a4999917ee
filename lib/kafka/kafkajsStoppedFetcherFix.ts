// kafkajs is CommonJS: its errors are no named export Node can see from an ES module.
import kafkajs from "kafkajs";
import Runner from "kafkajs/src/consumer/runner.js";

/**
 * A fix for kafkajs 2.2.4's consumer, which spins a core at 100 % for ever (the chaos suite's
 * scenario 9 hung its whole process: every timer, socket and test starved). The same family as
 * tulios/kafkajs#1384, whose fix (#1402) covered only a cluster with no broker left.
 *
 * How: the fetch manager restarts its fetchers whenever the cluster's broker set changes (a broker
 * down). If the runner is stopped meanwhile (`consumer.stop()`, a crash, a rejoin),
 * `Runner.stop` stops the fetchers it knew, and the fetch manager's loop creates new ones. Their
 * `Runner.fetch` answers `[]` at once because the runner no longer runs, with no I/O in between,
 * so each fetcher loops on resolved promises and never yields to the event loop.
 *
 * The fix makes a fetch of a stopped runner fail with a retriable error: the fetcher ends, the
 * fetch manager's start fails, and the runner's retrier, seeing the runner stopped, ends the
 * consumer's schedule as a stop does. A running consumer's fetches are untouched.
 *
 * Patched when this module is first imported; `kafkajsRequestQueueFix.ts` imports it, so it is
 * wherever that fix is.
 */
const { KafkaJSError } = kafkajs;
const FIXED = Symbol.for("reliable-consumers.kafkajsStoppedFetcherFix");
type Patched = typeof Runner.prototype & { [FIXED]?: true };
const proto = Runner.prototype as Patched;

if (!proto[FIXED]) {
  const fetch = proto.fetch;
  proto.fetch = function fetchWhileRunning(this: Runner, nodeId: number) {
    if (!this.running)
      return Promise.reject(new KafkaJSError("consumer not running: fetcher stopped", { retriable: true }));
    return fetch.call(this, nodeId);
  };
  proto[FIXED] = true;
}

/** True once the fix is applied (it is, as soon as this module is imported). */
export const kafkajsStoppedFetcherFixed = (): boolean => proto[FIXED] === true;
