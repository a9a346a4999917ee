import Runner from "kafkajs/src/consumer/runner.js";
import { describe, expect, it } from "vitest";
import { kafkajsStoppedFetcherFixed } from "../../lib/kafka/kafkajsStoppedFetcherFix.ts";

// kafkajs 2.2.4: a fetcher created after its runner stopped got `[]` from Runner.fetch at once and
// looped on resolved promises for ever, one core at 100 %, its process starved (chaos scenario 9).

describe("kafkajs: a stopped runner's fetch", () => {
  it("fails with a retriable error, so its fetcher ends instead of spinning", async () => {
    expect(kafkajsStoppedFetcherFixed()).toBe(true);
    const stopped = { running: false } as Runner;
    const error = await Runner.prototype.fetch.call(stopped, 1).then(
      () => undefined,
      (e: Error & { retriable?: boolean }) => e,
    );
    expect(error?.name).toBe("KafkaJSError");
    expect(error?.retriable).toBe(true);
  });

  it("ends a fetcher's loop: the loop kafkajs runs over Runner.fetch stops at the first fetch", async () => {
    // kafkajs's fetcher loop (consumer/fetcher.js), over a stopped runner: it must not turn again.
    const stopped = { running: false } as Runner;
    let turns = 0;
    const loop = async () => {
      for (;;) {
        turns++;
        await Runner.prototype.fetch.call(stopped, 1);
        if (turns > 1_000) throw new Error("still spinning");
      }
    };
    await expect(loop()).rejects.toThrow(/consumer not running/);
    expect(turns).toBe(1);
  });

  it("leaves a running consumer's fetch to kafkajs", async () => {
    const batches = [{ topic: "t" }];
    const running = {
      running: true,
      logger: { debug() {} },
      instrumentationEmitter: { emit() {} },
      consumerGroup: { fetch: async () => batches },
      heartbeat: async () => undefined,
    } as unknown as Runner;
    expect(await Runner.prototype.fetch.call(running, 1)).toBe(batches);
  });
});
