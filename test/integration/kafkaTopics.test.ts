import type { Admin } from "kafkajs";
import { ladderTopics } from "reliable-consumers/cdk";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createDeclaredTopics,
  fitDeclaration,
  TopicDeclarationMismatchError,
} from "../../local/src/services/kafka/topics.ts";
import { kafka } from "../support/clients.ts";
import { names } from "../support/names.ts";

const name = names(import.meta.url);

describe("topics created as declared on the local Kafka", () => {
  it("fits a declaration to the cluster's size, and says so", () => {
    const declared = {
      name: "t",
      partitions: 3,
      replicationFactor: 3,
      configs: { "min.insync.replicas": "2" },
    };
    expect(fitDeclaration(declared, 3, 3)).toEqual({ topic: declared, fitted: [] });
    expect(fitDeclaration(declared, 1, 1)).toEqual({
      topic: { ...declared, replicationFactor: 1, configs: { "min.insync.replicas": "1" } },
      fitted: ["replication factor 3 → 1 (1 broker)", "min.insync.replicas 2 → 1"],
    });
    expect(fitDeclaration({ name: "t" }, 3, 3).topic).toEqual({
      name: "t",
      partitions: -1,
      replicationFactor: 3,
      configs: {},
    });
  });

  describe.runIf(inject("kafkaSubstrate") === "real")("on the real single broker", () => {
    let admin: Admin;
    beforeAll(async () => {
      admin = kafka("topics-test").admin();
      await admin.connect();
    });
    afterAll(() => admin?.disconnect());

    it("creates the retry ladder's topics with their partitions and configs, RF and min ISR fitted to 1", async () => {
      const specs = ladderTopics({ topic: name("orders"), retryDelaysSeconds: [5, 60, 600], partitions: 3 });
      const created = await createDeclaredTopics(
        admin,
        specs.map((t) => ({
          name: t.name,
          partitions: t.partitions,
          replicationFactor: t.replicationFactor,
          configs: t.configs,
        })),
      );
      expect(created.map((t) => t.name)).toEqual(specs.map((t) => t.name));
      for (const [i, t] of created.entries()) {
        expect(t.created).toBe(true);
        expect(t.partitions).toBe(3);
        expect(t.replicationFactor).toBe(1);
        expect(t.fitted).toEqual(["replication factor 3 → 1 (1 broker)", "min.insync.replicas 2 → 1"]);
        expect(t.configs).toEqual({ ...specs[i]!.configs, "min.insync.replicas": "1" });
      }
      // What the broker itself reports, not what we asked for.
      const md = await admin.fetchTopicMetadata({ topics: [specs.at(-1)!.name] });
      expect(md.topics[0]!.partitions).toHaveLength(3);
      const dlq = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: 2, name: specs.at(-1)!.name, configNames: ["retention.ms"] }],
      });
      expect(dlq.resources[0]!.configEntries[0]!.configValue).toBe(String(14 * 86_400_000));
    });

    it("finds a topic declared again and checks it; a topic that differs from its declaration fails", async () => {
      const topic = name("drift");
      await createDeclaredTopics(admin, [
        { name: topic, partitions: 2, configs: { "retention.ms": "60000" } },
      ]);
      const again = await createDeclaredTopics(admin, [
        { name: topic, partitions: 2, configs: { "retention.ms": "60000" } },
      ]);
      expect(again[0]!.created).toBe(false);
      await expect(createDeclaredTopics(admin, [{ name: topic, partitions: 3 }])).rejects.toBeInstanceOf(
        TopicDeclarationMismatchError,
      );
      await expect(
        createDeclaredTopics(admin, [{ name: topic, partitions: 2, configs: { "retention.ms": "120000" } }]),
      ).rejects.toThrow(/retention\.ms=60000, declared 120000/);
    });

    it("auto-creates nothing: producing to an undeclared topic fails, as on MSK", async () => {
      const producer = kafka("topics-test").producer({ allowAutoTopicCreation: true, retry: { retries: 1 } });
      await producer.connect();
      try {
        await expect(
          producer.send({ topic: name("undeclared"), messages: [{ value: "x" }] }),
        ).rejects.toThrow(/does not host this topic-partition/);
      } finally {
        await producer.disconnect();
      }
    });
  });
});
