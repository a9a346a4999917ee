import { PermanentError, TransientError } from "reliable-consumers";
import {
  createRetryLadder,
  disconnectAllKafkaProducers,
  getKafkaProducer,
  kafkaConsumer,
} from "reliable-consumers/kafka";
import { startLocalKafkaTrigger } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { dynamodb } from "../support/clients.ts";
import { declareLadder, recordingTelemetry, tapTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

const name = names(import.meta.url);
const ddb = dynamodb();
const table = name("dedup");

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await disconnectAllKafkaProducers();
  await deleteTable(ddb, table);
});

describe("end to end through the local Kafka trigger (Lambda's event source mapping semantics)", () => {
  it("main topic → retry topic → processed once; a permanent failure lands in the DLQ; the partition never blocks", async () => {
    const topic = name("orders");
    const done = new Map<string, number>();
    let resolveAll: () => void;
    const allDone = new Promise<void>((r) => {
      resolveAll = r;
    });
    const retry = createRetryLadder({ delays: ["200ms"] });
    await declareLadder(retry, topic);
    const handler = kafkaConsumer<{ id: string; mode: "flaky" | "poison" | "ok" }>(
      async ({ body, attempt }) => {
        if (body.mode === "poison") throw new PermanentError("poison");
        if (body.mode === "flaky" && attempt === 1) throw new TransientError("flaky");
        done.set(body.id, (done.get(body.id) ?? 0) + 1);
        if (done.has("a") && done.has("c")) resolveAll();
      },
      {
        consumer: "local-e2e",
        retry,
        idempotency: { tableName: table },
        dynamodbClient: ddb,
        telemetry: recordingTelemetry(),
      },
    );
    const triggers = await Promise.all(
      [topic, `${topic}.retry.200ms`].map((t) =>
        startLocalKafkaTrigger({ topic: t, groupId: name(`esm-${t}`), handler, timeoutMs: 30_000 }),
      ),
    );
    const dlq = await tapTopics([`${topic}.DLQ`], name("dlq-tap"));
    try {
      await getKafkaProducer().send(topic, [
        { key: "k", value: JSON.stringify({ id: "a", mode: "flaky" }) },
        { key: "k", value: JSON.stringify({ id: "b", mode: "poison" }) },
        { key: "k", value: JSON.stringify({ id: "c", mode: "ok" }) },
      ]);
      await allDone;
      const [dead] = await dlq.take(`${topic}.DLQ`, 1);
      expect(dead!.message.headers?.["x-last-error"]?.toString()).toBe("PermanentError: poison");
    } finally {
      await Promise.all([...triggers.map((t) => t.stop()), dlq.stop()]);
    }
    expect(Object.fromEntries(done)).toEqual({ a: 1, c: 1 });
  });
});
