import { describe, expect, it } from "vitest";
import { kafka } from "../support/clients.ts";
import { declareTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

const name = names(import.meta.url);

describe("Kafka smoke (kafkajs)", () => {
  it("produces and consumes with headers through a consumer group", async () => {
    const topic = name("topic");
    await declareTopics([topic]);
    const client = kafka();
    const producer = client.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await producer.send({
      topic,
      messages: [
        { key: "order-1", value: "one", headers: { "message-id": "m-1" } },
        { key: "order-1", value: "two", headers: { "message-id": "m-2" } },
      ],
    });
    await producer.disconnect();

    const consumer = client.consumer({ groupId: name("group") });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen: { value: string; id: string }[] = [];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only got ${seen.length} records`)), 30_000);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            seen.push({ value: message.value!.toString(), id: message.headers!["message-id"]!.toString() });
            if (seen.length === 2) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    expect(seen).toEqual([
      { value: "one", id: "m-1" },
      { value: "two", id: "m-2" },
    ]);
  });
});
