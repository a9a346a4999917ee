import { App } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { CONTEXT_DEFAULTS, readContext } from "../../infra/config.ts";
import { ORDER_EVENTS_LADDER } from "../../infra/stacks/referenceServiceStack.ts";
import { encodeTopicConfigs } from "../../lib/cdk/kafkaTopics.ts";
import {
  deadLetterTopicName,
  delayLabel,
  ladderRetryPathSeconds,
  ladderRuntimeConfig,
  ladderTopics,
  retryTopicName,
} from "../../lib/cdk/retryLadder.ts";
import {
  ConsumerRuleError,
  checkDedupWindow,
  checkVisibilityTimeout,
  formatSeconds,
  kafkaRetryPathSeconds,
  requiredVisibilityTimeoutSeconds,
  sqsRetryPathSeconds,
} from "../../lib/cdk/rules.ts";
import { planTopic, TopicShrinkError } from "../../lib/handlers/kafkaTopics/plan.ts";
import { ladderFromRuntimeConfig } from "../../lib/kafka/retryLadder.ts";

const DAY = 86_400;

describe("visibility timeout rule", () => {
  it("is 6 × function timeout + batching window", () => {
    expect(requiredVisibilityTimeoutSeconds(30)).toBe(180);
    expect(requiredVisibilityTimeoutSeconds(30, 20)).toBe(200);
  });

  it("accepts exactly the minimum and rejects one second less, with a clear message", () => {
    const base = {
      queue: "orders",
      consumer: "order-consumer",
      functionTimeoutSeconds: 30,
      batchingWindowSeconds: 5,
    };
    expect(() => checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: 185 })).not.toThrow();
    expect(() => checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: 184 })).toThrow(
      ConsumerRuleError,
    );
    expect(() => checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: 184 })).toThrow(
      /visibility timeout of 3m 4s \(184s\).*order-consumer.*6 × function timeout \(30s\) \+ batching window \(5s\) = 3m 5s \(185s\)/s,
    );
  });

  it("rejects a function timeout whose 6× exceeds SQS's 12 h maximum", () => {
    expect(() =>
      checkVisibilityTimeout({
        queue: "q",
        consumer: "c",
        functionTimeoutSeconds: 7201,
        visibilityTimeoutSeconds: 43_200,
      }),
    ).toThrow(/maximum visibility timeout of 12h/);
  });
});

describe("retry paths and the dedup window", () => {
  it("standard queues: max(retention, DLQ retention), since expiry counts from the original enqueue", () => {
    expect(
      sqsRetryPathSeconds({ retentionSeconds: 4 * DAY, dlqRetentionSeconds: 14 * DAY, fifo: false }),
    ).toBe(14 * DAY);
  });

  it("FIFO queues: retention + DLQ retention, since the enqueue time resets; plus planned replay", () => {
    expect(
      sqsRetryPathSeconds({
        retentionSeconds: 4 * DAY,
        dlqRetentionSeconds: 14 * DAY,
        fifo: true,
        plannedReplaySeconds: DAY,
      }),
    ).toBe(19 * DAY);
  });

  it("Kafka: the longest of (delays before a stage + its retention)", () => {
    const stages = [
      { topic: "t", delaySeconds: 0, retentionSeconds: 7 * DAY },
      { topic: "t.retry.5s", delaySeconds: 5, retentionSeconds: DAY },
      { topic: "t.retry.1m", delaySeconds: 60, retentionSeconds: DAY },
      { topic: "t.DLQ", delaySeconds: 0, retentionSeconds: 14 * DAY },
    ];
    expect(kafkaRetryPathSeconds(stages)).toBe(14 * DAY + 65);
    expect(kafkaRetryPathSeconds(stages, 3600)).toBe(14 * DAY + 65 + 3600);
  });

  it("fails when a path reaches the window, naming every offending consumer", () => {
    const paths = [
      { consumer: "a", description: "queue a", seconds: 14 * DAY },
      { consumer: "b", description: "topic b", seconds: 16 * DAY },
    ];
    expect(() => checkDedupWindow("dedup", 17 * DAY, paths)).not.toThrow();
    expect(() => checkDedupWindow("dedup", 15 * DAY, paths)).toThrow(
      /"dedup" remembers keys for 15d.*- b: topic b = 16d/s,
    );
    expect(() => checkDedupWindow("dedup", 16 * DAY, paths)).toThrow(/above 1382400s/);
    expect(() => checkDedupWindow("dedup", 14 * DAY, paths)).toThrow(/- a: queue a = 14d[\s\S]*- b:/);
  });

  it("formats durations", () => {
    expect(formatSeconds(0)).toBe("0s");
    expect(formatSeconds(90_061)).toBe("1d 1h 1m 1s");
  });
});

describe("retry ladder declaration", () => {
  const ladder = { topic: "order-events", retryDelaysSeconds: [5, 60, 600], partitions: 6 };

  it("names topics .retry.<delay> and .DLQ", () => {
    expect(delayLabel(5)).toBe("5s");
    expect(delayLabel(60)).toBe("1m");
    expect(delayLabel(3600)).toBe("1h");
    expect(delayLabel(90)).toBe("90s");
    expect(retryTopicName("t", 600)).toBe("t.retry.10m");
    expect(deadLetterTopicName("t")).toBe("t.DLQ");
    expect(ladderTopics(ladder).map((t) => [t.name, t.role, t.delaySeconds])).toEqual([
      ["order-events", "main", 0],
      ["order-events.retry.5s", "retry", 5],
      ["order-events.retry.1m", "retry", 60],
      ["order-events.retry.10m", "retry", 600],
      ["order-events.DLQ", "dead-letter", 0],
    ]);
  });

  it("sets retention, cleanup policy and min.insync.replicas on every topic", () => {
    const [main, , , , dlq] = ladderTopics({ ...ladder, replicationFactor: 3 });
    expect(main!.configs).toEqual({
      "cleanup.policy": "delete",
      "retention.ms": String(7 * DAY * 1000),
      "min.insync.replicas": "2",
    });
    expect(dlq!.configs["retention.ms"]).toBe(String(14 * DAY * 1000));
    expect(ladderTopics({ ...ladder, replicationFactor: 1 })[0]!.configs["min.insync.replicas"]).toBe("1");
  });

  it("gives the consumer the same ladder at run time", () => {
    expect(ladderRuntimeConfig(ladder)).toEqual({
      topic: "order-events",
      retries: [
        { topic: "order-events.retry.5s", delayMs: 5000 },
        { topic: "order-events.retry.1m", delayMs: 60_000 },
        { topic: "order-events.retry.10m", delayMs: 600_000 },
      ],
      deadLetterTopic: "order-events.DLQ",
    });
    expect(ladderRetryPathSeconds(ladder)).toBe(14 * DAY + 665);
  });

  it("is accepted by the library's ladder parser (lib/kafka/retryLadder.ts), names and delays alike", () => {
    for (const decl of [ORDER_EVENTS_LADDER, { ...ladder, retryDelaysSeconds: [5, 90, 3600, 7200] }]) {
      const parsed = ladderFromRuntimeConfig(JSON.stringify(ladderRuntimeConfig(decl)));
      expect(parsed.delaysMs).toEqual(decl.retryDelaysSeconds.map((s) => s * 1000));
    }
  });

  it("rejects delays that do not grow and bad names", () => {
    expect(() => ladderTopics({ ...ladder, retryDelaysSeconds: [60, 5] })).toThrow(/must grow/);
    expect(() => ladderTopics({ ...ladder, topic: "bad topic" })).toThrow(/invalid Kafka topic name/);
    expect(() => ladderTopics({ ...ladder, replicationFactor: 1, minInsyncReplicas: 2 })).toThrow(/exceeds/);
  });

  it("encodes MSK topic configs as base64 key=value lines", () => {
    const encoded = encodeTopicConfigs({ "retention.ms": "1000", "cleanup.policy": "delete" });
    expect(Buffer.from(encoded, "base64").toString()).toBe("retention.ms=1000\ncleanup.policy=delete");
  });
});

describe("MSK Serverless topic plan", () => {
  const desired = { name: "t", partitions: 6, replicationFactor: -1, configs: { "retention.ms": "1000" } };

  it("creates a missing topic", () => {
    expect(planTopic(desired, undefined)).toEqual([{ kind: "create", topic: desired }]);
  });

  it("adds partitions and alters changed configs, and does nothing when equal", () => {
    expect(planTopic(desired, { name: "t", partitions: 3, configs: { "retention.ms": "5" } })).toEqual([
      { kind: "addPartitions", name: "t", from: 3, to: 6 },
      { kind: "alterConfigs", name: "t", configs: { "retention.ms": "1000" } },
    ]);
    expect(planTopic(desired, { name: "t", partitions: 6, configs: { "retention.ms": "1000" } })).toEqual([]);
  });

  it("refuses to shrink partitions, with a clear error", () => {
    expect(() => planTopic(desired, { name: "t", partitions: 12, configs: {} })).toThrow(TopicShrinkError);
    expect(() => planTopic(desired, { name: "t", partitions: 12, configs: {} })).toThrow(
      /Refusing to shrink topic "t" from 12 to 6 partitions/,
    );
  });
});

describe("context", () => {
  it("has offline defaults and reads overrides", () => {
    expect(readContext(new App())).toEqual(CONTEXT_DEFAULTS);
    const ctx = readContext(
      new App({
        context: {
          mskClusterKind: "serverless",
          privateSubnetIds: "subnet-a, subnet-b",
          createMskCluster: "true",
        },
      }),
    );
    expect(ctx.mskClusterKind).toBe("serverless");
    expect(ctx.privateSubnetIds).toEqual(["subnet-a", "subnet-b"]);
    expect(ctx.createMskCluster).toBe(true);
    expect(() => readContext(new App({ context: { mskClusterKind: "nope" } }))).toThrow(/mskClusterKind/);
  });
});
