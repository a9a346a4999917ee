import { App, Token } from "aws-cdk-lib";
import {
  ConsumerRuleError,
  checkDedupWindow,
  checkKafkaMapping,
  checkMskTrigger,
  checkQueueWithDlq,
  checkSqsTrigger,
  checkVisibilityTimeout,
  deadLetterTopicName,
  defaultKafkaRetryAttempts,
  delayLabel,
  encodeTopicConfigs,
  kafkaRetryPathSeconds,
  kafkaWaitHandBacks,
  ladderRetryPathSeconds,
  ladderRuntimeConfig,
  ladderTopics,
  requiredVisibilityTimeoutSeconds,
  retryTopicName,
  sqsRetryPathSeconds,
} from "reliable-consumers/cdk";
import { ladderFromRuntimeConfig } from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";
import { CONTEXT_DEFAULTS, readContext } from "../../infra/config.ts";
import { ORDER_EVENTS_LADDER } from "../../infra/stacks/referenceServiceStack.ts";
import { formatSeconds } from "../../lib/cdk/rules.ts";
import { DEDUP_DEFAULTS } from "../../lib/dedup/schema.ts";
import { planTopic, TopicShrinkError } from "../../lib/handlers/kafkaTopics/plan.ts";
import {
  defaultHeartbeatAfterMs,
  minimumHeartbeatVisibilitySeconds,
} from "../../lib/sqs/heartbeatDefaults.ts";
import { ruleCodeOf } from "./synthHelpers.ts";

const DAY = 86_400;
/** A number CloudFormation resolves at deploy time (a parameter): unknown at synth. */
const TOKEN = Token.asNumber({ Ref: "SomeParameter" });

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
    expect(ruleCodeOf(() => checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: 184 }))).toBe(
      "VisibilityTimeoutTooShort",
    );
    expect(() => checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: 184 })).toThrow(
      /visibility timeout of 3m 4s \(184s\).*order-consumer.*6 × function timeout \(30s\) \+ batching window \(5s\) = 3m 5s \(185s\)/s,
    );
  });

  it("rejects a function timeout whose 6× exceeds SQS's 12 h maximum", () => {
    const check = () =>
      checkVisibilityTimeout({
        queue: "q",
        consumer: "c",
        functionTimeoutSeconds: 7201,
        visibilityTimeoutSeconds: 43_200,
        path: "S/C",
      });
    expect(ruleCodeOf(check)).toBe("VisibilityTimeoutAboveMaximum");
    expect(check).toThrow(/^\[VisibilityTimeoutAboveMaximum\] S\/C: .*maximum visibility timeout of 12h/);
  });

  it("skips values that are tokens instead of misreading them", () => {
    const base = { queue: "q", consumer: "c", functionTimeoutSeconds: 30 };
    // A token's placeholder is a huge negative number: read as seconds it would "fail" the rule.
    expect(() => checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: TOKEN })).not.toThrow();
    expect(() =>
      checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: 60, batchingWindowSeconds: TOKEN }),
    ).not.toThrow();
    expect(() => checkSqsTrigger({ fifo: true, batchSize: TOKEN, batchingWindowSeconds: 0 })).not.toThrow();
    expect(() =>
      checkSqsTrigger({ fifo: false, batchSize: 10, batchingWindowSeconds: 0, maxConcurrency: TOKEN }),
    ).not.toThrow();
    expect(() =>
      checkMskTrigger({
        batchSize: TOKEN,
        batchingWindowSeconds: 1,
        minimumPollers: TOKEN,
        maximumPollers: 2,
      }),
    ).not.toThrow();
    expect(() =>
      checkQueueWithDlq({
        fifo: false,
        maxReceiveCount: TOKEN,
        retentionSeconds: TOKEN,
        dlqRetentionSeconds: DAY,
      }),
    ).not.toThrow();
  });
});

describe("visibility heartbeat (a queue sized for it)", () => {
  const base = { queue: "reports", consumer: "report-worker", functionTimeoutSeconds: 300, heartbeat: true };

  it("lets the visibility timeout go down to the function timeout, where the default heartbeat fires in time", () => {
    const visibility = minimumHeartbeatVisibilitySeconds(300);
    expect(visibility).toBe(300);
    expect(() => checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: visibility })).not.toThrow();
    // The default's first beat lands inside the invocation, a third of the way into the visibility.
    expect(defaultHeartbeatAfterMs(visibility)).toBeLessThan(300 * 1000);
    expect(defaultHeartbeatAfterMs(visibility)).toBe(100_000);
  });

  it("under the 6× rule the default heartbeat could never fire within the invocation", () => {
    // Why the heartbeat mode exists: the default first beat is at a third of 6 × timeout = 2 × timeout.
    expect(defaultHeartbeatAfterMs(requiredVisibilityTimeoutSeconds(300))).toBeGreaterThan(300 * 1000);
  });

  it("needs room for the batching window before the first beat, and at least the function timeout", () => {
    expect(minimumHeartbeatVisibilitySeconds(5, 0)).toBe(30);
    expect(minimumHeartbeatVisibilitySeconds(5, 20)).toBe(90);
    expect(
      ruleCodeOf(() =>
        checkVisibilityTimeout({
          ...base,
          functionTimeoutSeconds: 5,
          batchingWindowSeconds: 20,
          visibilityTimeoutSeconds: 89,
        }),
      ),
    ).toBe("HeartbeatVisibilityTooShort");
    expect(ruleCodeOf(() => checkVisibilityTimeout({ ...base, visibilityTimeoutSeconds: 299 }))).toBe(
      "HeartbeatVisibilityTooShort",
    );
  });
});

describe("trigger limits", () => {
  it("SQS: FIFO batches ≤ 10 without a window, > 10 needs a window, concurrency 2–1000", () => {
    expect(ruleCodeOf(() => checkSqsTrigger({ fifo: true, batchSize: 11, batchingWindowSeconds: 0 }))).toBe(
      "SqsBatchSizeOutOfRange",
    );
    expect(ruleCodeOf(() => checkSqsTrigger({ fifo: true, batchSize: 10, batchingWindowSeconds: 1 }))).toBe(
      "SqsFifoBatchingWindow",
    );
    expect(ruleCodeOf(() => checkSqsTrigger({ fifo: false, batchSize: 11, batchingWindowSeconds: 0 }))).toBe(
      "SqsBatchSizeNeedsBatchingWindow",
    );
    expect(
      ruleCodeOf(() => checkSqsTrigger({ fifo: false, batchSize: 10_001, batchingWindowSeconds: 5 })),
    ).toBe("SqsBatchSizeOutOfRange");
    expect(
      ruleCodeOf(() => checkSqsTrigger({ fifo: false, batchSize: 10, batchingWindowSeconds: 301 })),
    ).toBe("BatchingWindowOutOfRange");
    expect(
      ruleCodeOf(() =>
        checkSqsTrigger({ fifo: false, batchSize: 10, batchingWindowSeconds: 0, maxConcurrency: 1 }),
      ),
    ).toBe("SqsMaxConcurrencyOutOfRange");
    expect(() =>
      checkSqsTrigger({ fifo: false, batchSize: 100, batchingWindowSeconds: 1, maxConcurrency: 2 }),
    ).not.toThrow();
  });

  it("MSK: pollers are always provisioned (≥ 1) and min ≤ max", () => {
    const ok = { batchSize: 100, batchingWindowSeconds: 1, minimumPollers: 1, maximumPollers: 2 };
    expect(() => checkMskTrigger(ok)).not.toThrow();
    expect(ruleCodeOf(() => checkMskTrigger({ ...ok, minimumPollers: 0 }))).toBe("MskPollersOutOfRange");
    expect(ruleCodeOf(() => checkMskTrigger({ ...ok, minimumPollers: 3 }))).toBe("MskPollersOutOfRange");
    expect(ruleCodeOf(() => checkMskTrigger({ ...ok, batchSize: 0 }))).toBe("MskBatchSizeOutOfRange");
    // A poller group: its name, up to 100 mappings and 2,000 maximum pollers in all.
    expect(() => checkMskTrigger({ ...ok, pollerGroupName: "a_b-1", mappingsInGroup: 4 })).not.toThrow();
    for (const bad of [
      { pollerGroupName: "" },
      { pollerGroupName: "a.b" },
      { pollerGroupName: "x", mappingsInGroup: 101, maximumPollers: 1 },
      { pollerGroupName: "x", mappingsInGroup: 4, maximumPollers: 501 },
    ]) {
      expect(
        ruleCodeOf(() => checkMskTrigger({ ...ok, ...bad })),
        JSON.stringify(bad),
      ).toBe("MskPollerGroupInvalid");
    }
  });

  it("SQS: provisioned pollers 2–200 and up to 10,000, never with maxConcurrency", () => {
    const ok = { fifo: false, batchSize: 10, batchingWindowSeconds: 0 };
    expect(() =>
      checkSqsTrigger({ ...ok, provisionedPollers: { minimumPollers: 2, maximumPollers: 10_000 } }),
    ).not.toThrow();
    for (const p of [
      { minimumPollers: 1, maximumPollers: 2 },
      { minimumPollers: 201, maximumPollers: 300 },
      { minimumPollers: 2, maximumPollers: 10_001 },
      { minimumPollers: 3, maximumPollers: 2 },
    ]) {
      expect(
        ruleCodeOf(() => checkSqsTrigger({ ...ok, provisionedPollers: p })),
        JSON.stringify(p),
      ).toBe("SqsPollersOutOfRange");
    }
    expect(
      ruleCodeOf(() =>
        checkSqsTrigger({
          ...ok,
          maxConcurrency: 5,
          provisionedPollers: { minimumPollers: 2, maximumPollers: 4 },
        }),
      ),
    ).toBe("SqsProvisionedWithMaxConcurrency");
  });

  it("queues: maxReceiveCount 1–1000, retention 1 min–14 d, a standard DLQ outliving its queue", () => {
    const ok = { fifo: false, maxReceiveCount: 5, retentionSeconds: 4 * DAY, dlqRetentionSeconds: 14 * DAY };
    expect(() => checkQueueWithDlq(ok)).not.toThrow();
    expect(ruleCodeOf(() => checkQueueWithDlq({ ...ok, maxReceiveCount: 0 }))).toBe(
      "MaxReceiveCountOutOfRange",
    );
    expect(ruleCodeOf(() => checkQueueWithDlq({ ...ok, dlqRetentionSeconds: 15 * DAY }))).toBe(
      "RetentionOutOfRange",
    );
    expect(ruleCodeOf(() => checkQueueWithDlq({ ...ok, dlqRetentionSeconds: DAY }))).toBe(
      "DlqRetentionShorterThanQueue",
    );
  });

  it("FIFO queues keep receive headroom for records that did not fail (≥ 3 receives)", () => {
    const fifo = { fifo: true, maxReceiveCount: 3, retentionSeconds: 4 * DAY, dlqRetentionSeconds: 4 * DAY };
    expect(() => checkQueueWithDlq(fifo)).not.toThrow();
    expect(ruleCodeOf(() => checkQueueWithDlq({ ...fifo, maxReceiveCount: 2 }))).toBe(
      "FifoReceiveHeadroomTooSmall",
    );
    // A standard queue re-sends healthy records instead, so it needs no headroom.
    expect(() => checkQueueWithDlq({ ...fifo, fifo: false, maxReceiveCount: 1 })).not.toThrow();
  });
});

describe("Kafka mappings (the library decides each record's fate; Lambda isolates a crashing one)", () => {
  const ok = {
    topic: "t",
    provisioned: true,
    reportBatchItemFailures: true,
    bisect: true,
    retryAttempts: 10,
    onFailureDestination: "kafka://t.DLQ",
  };

  it("accepts provisioned mode, partial batch responses, bisect, a finite limit and a Kafka destination", () => {
    expect(() => checkKafkaMapping(ok)).not.toThrow();
    // No limit with a Kafka destination: Lambda applies 10.
    expect(() => checkKafkaMapping({ ...ok, retryAttempts: -1 })).not.toThrow();
    // Batches of one need no bisection.
    expect(() => checkKafkaMapping({ ...ok, bisect: false, batchSize: 1 })).not.toThrow();
  });

  it("refuses a mapping that would ignore the partial batch response, naming what needs provisioned mode", () => {
    expect(ruleCodeOf(() => checkKafkaMapping({ ...ok, provisioned: false }))).toBe(
      "KafkaMappingNotProvisioned",
    );
    expect(ruleCodeOf(() => checkKafkaMapping({ ...ok, provisioned: false, schemaRegistry: true }))).toBe(
      "KafkaSchemaRegistryNeedsProvisionedMode",
    );
    expect(ruleCodeOf(() => checkKafkaMapping({ ...ok, reportBatchItemFailures: false }))).toBe(
      "KafkaMappingWithoutPartialBatchResponse",
    );
  });

  it("refuses a mapping that drops records: a record age, a metadata-only destination, a limit without one", () => {
    for (const bad of [
      { maxRecordAgeSeconds: 3600 },
      { onFailureDestination: "arn:aws:sqs:us-east-1:111122223333:q" },
      { onFailureDestination: undefined, retryAttempts: 2 },
    ]) {
      expect(
        ruleCodeOf(() => checkKafkaMapping({ ...ok, ...bad })),
        JSON.stringify(bad),
      ).toBe("KafkaMappingDeadLettersUnfinishedRecords");
    }
  });

  it("refuses a mapping a crashing record would block: unlimited retries without a destination, no bisect", () => {
    // Issue 26 item 4: this was the constructs' own configuration.
    expect(
      ruleCodeOf(() => checkKafkaMapping({ ...ok, retryAttempts: -1, onFailureDestination: undefined })),
    ).toBe("KafkaMappingBlocksOnCrash");
    expect(ruleCodeOf(() => checkKafkaMapping({ ...ok, bisect: false }))).toBe("KafkaMappingWithoutBisect");
    expect(ruleCodeOf(() => checkKafkaMapping({ ...ok, onFailureDestination: "kafka://t" }))).toBe(
      "KafkaDestinationIsSource",
    );
  });

  it("refuses a limit a healthy record uses up while it waits, and one outside 0–10,000", () => {
    expect(ruleCodeOf(() => checkKafkaMapping({ ...ok, retryAttempts: 3, minimumRetryAttempts: 5 }))).toBe(
      "KafkaRetriesBelowWaits",
    );
    expect(ruleCodeOf(() => checkKafkaMapping({ ...ok, retryAttempts: -1, minimumRetryAttempts: 11 }))).toBe(
      "KafkaRetriesBelowWaits",
    );
    expect(ruleCodeOf(() => checkKafkaMapping({ ...ok, retryAttempts: 10_001 }))).toBe(
      "KafkaRetryAttemptsOutOfRange",
    );
  });

  it("sizes the limit from the rung's delay and the function timeout", () => {
    expect(kafkaWaitHandBacks(0, 30)).toBe(0);
    expect(kafkaWaitHandBacks(5, 30)).toBe(1);
    expect(kafkaWaitHandBacks(600, 60)).toBe(11); // 10 min, 55 s of waiting per invocation
    expect(kafkaWaitHandBacks(60, 5)).toBe(Number.POSITIVE_INFINITY); // no time to wait at all
    expect(defaultKafkaRetryAttempts(0, 30)).toBe(10);
    expect(defaultKafkaRetryAttempts(600, 60)).toBe(21);
    expect(defaultKafkaRetryAttempts(86_400, 6)).toBe(10_000);
  });
});

describe("retry paths and the dedup window", () => {
  it("SQS: a parked copy (SendMessage) and a redriven copy are new messages with a fresh retention", () => {
    // Received up to 4 d after the send, parked then (kept 14 d from the park), redriven just before
    // it expires (kept 4 d more in the source): 22 d, for standard and FIFO queues alike.
    expect(sqsRetryPathSeconds({ retentionSeconds: 4 * DAY, dlqRetentionSeconds: 14 * DAY })).toBe(22 * DAY);
    expect(
      sqsRetryPathSeconds({
        retentionSeconds: 4 * DAY,
        dlqRetentionSeconds: 14 * DAY,
        plannedReplaySeconds: DAY,
      }),
    ).toBe(23 * DAY);
  });

  it("SQS: with the defaults (4 d + 14 d) the path outlives a 15-day window, and the default window covers it", () => {
    const defaults = sqsRetryPathSeconds({ retentionSeconds: 4 * DAY, dlqRetentionSeconds: 14 * DAY })!;
    const path = { consumer: "c", description: "queue q", seconds: defaults };
    expect(ruleCodeOf(() => checkDedupWindow("dedup", 15 * DAY, [path]))).toBe("DedupWindowTooShort");
    expect(() => checkDedupWindow("dedup", DEDUP_DEFAULTS.windowSeconds, [path])).not.toThrow();
  });

  it("a path or window that is a token is not checked", () => {
    expect(sqsRetryPathSeconds({ retentionSeconds: TOKEN, dlqRetentionSeconds: 14 * DAY })).toBeUndefined();
    const known = { consumer: "c", description: "queue q", seconds: 22 * DAY };
    expect(() => checkDedupWindow("dedup", TOKEN, [known])).not.toThrow();
    expect(() =>
      checkDedupWindow("dedup", DAY, [{ consumer: "c", description: "queue q", seconds: undefined }]),
    ).not.toThrow();
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

  it("Kafka: a record replayed from the DLQ is a new record, retained in the topic it lands in", () => {
    const stages = [
      { topic: "t", delaySeconds: 0, retentionSeconds: 7 * DAY },
      { topic: "t.retry.5s", delaySeconds: 5, retentionSeconds: DAY },
      { topic: "t.DLQ", delaySeconds: 0, retentionSeconds: 14 * DAY, replayedIntoRetentionSeconds: 7 * DAY },
    ];
    expect(kafkaRetryPathSeconds(stages)).toBe(21 * DAY + 5);
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
    expect(() => checkDedupWindow("dedup", 16 * DAY, paths)).toThrow(/window above 1382400s/);
    expect(ruleCodeOf(() => checkDedupWindow("dedup", 16 * DAY, paths))).toBe("DedupWindowTooShort");
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
    // The DLQ stage: 665 s of delays + 14 d + a replay's 7 d in the main topic.
    expect(ladderRetryPathSeconds(ladder)).toBe(21 * DAY + 665);
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
    for (const bad of [
      { retryDelaysSeconds: [60, 5] },
      { topic: "bad topic" },
      { partitions: 0 },
      { retryDelaysSeconds: [1.5] },
      { replicationFactor: 1, minInsyncReplicas: 2 },
    ]) {
      expect(ruleCodeOf(() => ladderTopics({ ...ladder, ...bad }))).toBe("RetryLadderInvalid");
    }
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
