import { KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from "kafkajs";
import { describe, expect, it } from "vitest";
import { createTopicsWithLeaders, topicOffsets } from "../../lib/kafka/topicsWithLeaders.ts";

type Answer = Error | Array<{ leader: number; partitionErrorCode?: number }>;

/**
 * An admin answering metadata requests in the order given: what brokers answer for a topic created
 * a moment ago (kafkajs's own errors, as its protocol layer makes them). The retry rule is the
 * logic under test; the real broker path runs in every local-runtime test that creates topics.
 */
function scriptedAdmin(answers: Answer[]) {
  const calls = { create: 0, metadata: 0 };
  const admin = {
    async createTopics() {
      calls.create++;
      return true;
    },
    async fetchTopicMetadata(options?: { topics: string[] }) {
      const topics = options?.topics;
      const answer = answers[Math.min(calls.metadata++, answers.length - 1)]!;
      if (answer instanceof Error) throw answer;
      return {
        topics: (topics ?? []).map((name) => ({
          name,
          partitions: answer.map((p, i) => ({
            partitionId: i,
            leader: p.leader,
            partitionErrorCode: p.partitionErrorCode ?? 0,
            replicas: [1],
            isr: [1],
            offlineReplicas: [],
          })),
        })),
      };
    },
  };
  return { admin, calls };
}

// kafkajs's protocol layer builds its errors from the broker's code this way; its typings only
// declare the Error form of the constructor.
const protocolError = (type: string, code: number, retriable: boolean, message: string) =>
  new KafkaJSProtocolError({ type, code, retriable, message } as unknown as Error);
const unknownTopic = () =>
  protocolError("UNKNOWN_TOPIC_OR_PARTITION", 3, true, "This server does not host this topic-partition");

describe("createTopicsWithLeaders", () => {
  it("waits through UNKNOWN_TOPIC_OR_PARTITION (bare, or inside kafkajs's retry wrapper) and leaderless partitions", async () => {
    const { admin, calls } = scriptedAdmin([
      unknownTopic(),
      new KafkaJSNumberOfRetriesExceeded(unknownTopic(), { retryCount: 5, retryTime: 100 }),
      [{ leader: -1 }, { leader: 1 }],
      [{ leader: 1 }, { leader: 1 }],
    ]);
    await createTopicsWithLeaders(admin, [{ topic: "t", numPartitions: 2 }]);
    expect(calls).toEqual({ create: 1, metadata: 4 });
  });

  it("any other error is thrown at once", async () => {
    const denied = protocolError("TOPIC_AUTHORIZATION_FAILED", 29, false, "Not authorized to access topics");
    const { admin, calls } = scriptedAdmin([denied]);
    await expect(createTopicsWithLeaders(admin, [{ topic: "t" }])).rejects.toBe(denied);
    expect(calls.metadata).toBe(1);
  });

  it("gives up with what it was waiting for once the time is spent", async () => {
    const { admin } = scriptedAdmin([[{ leader: -1 }]]);
    await expect(createTopicsWithLeaders(admin, [{ topic: "t" }], { timeoutMs: 0 })).rejects.toThrow(
      /not ready after 0 ms: no leader yet for t/,
    );
  });
});

/** A client whose admins answer ListOffsets in the order given, one admin per try. */
function scriptedClient(answers: Array<Error | "ok">) {
  const calls = { admins: 0, disconnects: 0, fetches: 0 };
  const kafka = {
    admin() {
      calls.admins++;
      return {
        async connect() {},
        async disconnect() {
          calls.disconnects++;
        },
        async fetchTopicOffsets() {
          const answer = answers[Math.min(calls.fetches++, answers.length - 1)]!;
          if (answer instanceof Error) throw answer;
          return [{ partition: 0, offset: "3", high: "3", low: "1" }];
        },
      };
    },
  } as unknown as Parameters<typeof topicOffsets>[0];
  return { kafka, calls };
}

const notLeader = () =>
  protocolError(
    "NOT_LEADER_FOR_PARTITION",
    6,
    true,
    "This server is not the leader for that topic-partition",
  );

describe("topicOffsets", () => {
  it("waits out a leader that is moving, with a new admin (fresh metadata) per try", async () => {
    const { kafka, calls } = scriptedClient([
      notLeader(),
      new KafkaJSNumberOfRetriesExceeded(unknownTopic(), { retryCount: 5, retryTime: 100 }),
      "ok",
    ]);
    expect(await topicOffsets(kafka, "t")).toEqual([{ partition: 0, offset: "3", high: "3", low: "1" }]);
    expect(calls).toEqual({ admins: 3, disconnects: 3, fetches: 3 });
  });

  it("any other error is thrown at once", async () => {
    const denied = protocolError("TOPIC_AUTHORIZATION_FAILED", 29, false, "Not authorized to access topics");
    const { kafka, calls } = scriptedClient([denied]);
    await expect(topicOffsets(kafka, "t")).rejects.toBe(denied);
    expect(calls).toEqual({ admins: 1, disconnects: 1, fetches: 1 });
  });

  it("gives up, saying why, once the time is spent", async () => {
    const { kafka } = scriptedClient([notLeader()]);
    await expect(topicOffsets(kafka, "t", { timeoutMs: 0 })).rejects.toThrow(
      /offsets of t not readable after 0 ms: NOT_LEADER_FOR_PARTITION/,
    );
  });
});
