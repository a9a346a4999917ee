import { execFileSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { type Admin, Kafka, logLevel } from "kafkajs";
import { ladderTopics } from "reliable-consumers/cdk";
import { type KafkaProducer, KafkaPublishTransientError } from "reliable-consumers/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKafkaProducer } from "../../../lib/kafka/producer.ts";
import { names } from "../../../test/support/names.ts";
import { type KafkaCluster, startKafkaCluster } from "../../src/services/kafka/cluster.ts";
import { createDeclaredTopics } from "../../src/services/kafka/topics.ts";

const name = names(import.meta.url);

/** Every TCP port a process listens on, as `address:port`. */
function listening(pid: number): string[] {
  return execFileSync("ss", ["-ltnpH"], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.includes(`pid=${pid},`))
    .map((l) => l.trim().split(/\s+/)[3]!);
}

/** Waits until every partition of `topic` has exactly `isr` in-sync replicas. */
async function untilIsr(admin: Admin, topic: string, isr: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const md = await admin.fetchTopicMetadata({ topics: [topic] }).catch(() => undefined);
    const partitions = md?.topics[0]?.partitions ?? [];
    if (partitions.length > 0 && partitions.every((p) => p.isr.length === isr && p.leader >= 0)) return;
    if (Date.now() > deadline) throw new Error(`${topic}: ISR is not ${isr}: ${JSON.stringify(partitions)}`);
    await sleep(250);
  }
}

describe("the 3-broker Kafka cluster (RF 3, min.insync.replicas 2)", () => {
  let cluster: KafkaCluster;
  let admin: Admin;
  let producer: KafkaProducer;
  const declaration = { topic: name("orders"), retryDelaysSeconds: [5, 60], partitions: 3 };

  beforeAll(async () => {
    cluster = await startKafkaCluster({ brokers: 3 });
    admin = new Kafka({
      clientId: "cluster-test",
      brokers: cluster.brokers,
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    producer = createKafkaProducer(
      { brokers: cluster.brokers, retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 1_000 } },
      { logLevel: logLevel.NOTHING, ackTimeoutMs: 5_000 },
    );
  }, 180_000);
  afterAll(async () => {
    await producer?.disconnect();
    await admin?.disconnect();
    await cluster?.stop();
  });

  it("listens on 127.0.0.1 only, each node on its own port", () => {
    const addresses = [0, ...cluster.brokerIds].flatMap((id) => listening(cluster.pid(id)!));
    expect(addresses.length).toBeGreaterThanOrEqual(4); // 3 broker listeners and the controller's
    expect(addresses.every((a) => a.startsWith("127.0.0.1:"))).toBe(true);
    for (const id of cluster.brokerIds) expect(addresses).toContain(cluster.address(id));
  });

  it("creates the retry ladder's topics exactly as declared: partitions, RF 3, min ISR 2, retention", async () => {
    const specs = ladderTopics(declaration);
    const created = await createDeclaredTopics(
      admin,
      specs.map((t) => ({
        name: t.name,
        partitions: t.partitions,
        replicationFactor: t.replicationFactor,
        configs: t.configs,
      })),
    );
    expect(created.map((t) => t.fitted)).toEqual(specs.map(() => []));
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: specs.map((t) => ({ type: 2, name: t.name })),
    });
    for (const spec of specs) {
      const md = await admin.fetchTopicMetadata({ topics: [spec.name] });
      const partitions = md.topics[0]!.partitions;
      expect(partitions, spec.name).toHaveLength(3);
      expect(partitions.every((p) => p.replicas.length === 3 && p.isr.length === 3)).toBe(true);
      const configs = Object.fromEntries(
        described.resources
          .find((r) => r.resourceName === spec.name)!
          .configEntries.map((e) => [e.configName, e.configValue]),
      );
      expect(configs).toMatchObject({
        "min.insync.replicas": "2",
        "cleanup.policy": "delete",
        "retention.ms": spec.configs["retention.ms"],
      });
    }
  });

  it("moves a partition's leader to another in-sync replica with every broker up", async () => {
    const topic = declaration.topic;
    const leaderOf0 = async () =>
      (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions.find(
        (p) => p.partitionId === 0,
      )!;
    const before = await leaderOf0();
    const target = before.isr.find((id) => id !== before.leader)!;
    await cluster.moveLeader(topic, 0, target);
    const deadline = Date.now() + 20_000;
    let after = await leaderOf0();
    while (after.leader !== target && Date.now() < deadline) {
      await sleep(200);
      after = await leaderOf0();
    }
    expect(after.leader).toBe(target);
    expect(after.isr).toHaveLength(3);
  });

  it("one broker down: acks=all still succeeds; two down: NOT_ENOUGH_REPLICAS; one back: it succeeds again, nothing lost", async () => {
    const topic = declaration.topic;
    const sent: string[] = [];
    const send = async (value: string) => {
      await producer.send(topic, [{ key: "order-1", value }]);
      sent.push(value);
    };
    await send("before");

    await cluster.stopBroker(3, { signal: "SIGKILL" }); // a crash: fenced after the session timeout
    await untilIsr(admin, topic, 2);
    await send("one-down");

    await cluster.stopBroker(2); // a controlled shutdown
    await untilIsr(admin, topic, 1);
    const error = await send("two-down").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KafkaPublishTransientError);
    expect((error as KafkaPublishTransientError).kafkaType).toMatch(/^NOT_ENOUGH_REPLICAS/);

    await cluster.startBroker(2);
    await untilIsr(admin, topic, 2);
    await send("two-back");
    expect(sent).toEqual(["before", "one-down", "two-back"]);

    // Every acknowledged record is there, in order, once (the key's partition).
    const consumer = new Kafka({
      clientId: "cluster-test",
      brokers: cluster.brokers,
      logLevel: logLevel.NOTHING,
    }).consumer({
      groupId: name("check"),
      maxWaitTimeInMs: 50,
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const got: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`got ${got.join(",")}`)), 30_000);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            got.push(message.value!.toString());
            if (got.length >= sent.length) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    expect(got).toEqual(sent);
  });
});
