import { AvroDeserializer, SchemaRegistryClient, SerdeType } from "@confluentinc/schemaregistry";
import {
  avro,
  avroEncoder,
  confluentRegistry,
  disconnectAllKafkaProducers,
  getKafkaProducer,
  readConfluentFrame,
} from "reliable-consumers/kafka";
import type { NewOutboxEvent } from "reliable-consumers/outbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OUTBOX_SCHEMA_HEADER } from "../../lib/kafka/schemas/outboxSchemas.ts";
import { resolveNewEvent } from "../../lib/outbox/outboxEvent.ts";
import { createOutboxPublisher } from "../../lib/outbox/publisher.ts";
import { type ConfluentStandIn, startConfluentStandIn } from "../support/confluentRegistryStandIn.ts";
import { tapTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

// Issue 16 item 4: an outbox event that declares its schema is published registry-framed, exactly
// as Confluent's serializer frames it, so Confluent's own deserializer reads it back.

const name = names(import.meta.url);
let registry: ConfluentStandIn;
beforeAll(async () => {
  registry = await startConfluentStandIn();
});
afterAll(async () => {
  await disconnectAllKafkaProducers();
  await registry.stop();
});

const PaymentCaptured = {
  type: "record",
  name: "PaymentCaptured",
  namespace: "com.example",
  fields: [
    { name: "paymentId", type: "string" },
    { name: "cents", type: "long" },
  ],
};

const build = (input: NewOutboxEvent) =>
  resolveNewEvent(input, {
    now: Date.now(),
    defaultDestination: undefined,
    incomingTraceparent: undefined,
    causationId: undefined,
    retentionSeconds: 86_400,
    pendingShards: 1,
  });

describe("outbox events with a declared schema", () => {
  it("are serialized with the registry's framing (registered when allowed); bad ones are rejected alone", async () => {
    const topic = name("payments");
    const client = confluentRegistry({ url: registry.url });
    const publisher = createOutboxPublisher({
      kafka: getKafkaProducer(),
      schemas: {
        "payment-captured": avroEncoder({
          registry: client,
          subject: `${topic}-value`,
          schema: PaymentCaptured,
          register: true,
        }),
        "lookup-only": avroEncoder({
          registry: client,
          subject: `${topic}-other-value`,
          schema: PaymentCaptured,
        }),
      },
    });
    const event = (aggregateId: string, payload: unknown, schema = "payment-captured") =>
      build({
        aggregateType: "payment",
        aggregateId,
        eventType: "PaymentCaptured",
        payload,
        destination: `kafka:${topic}`,
        headers: { [OUTBOX_SCHEMA_HEADER]: schema },
      });
    const events = [
      event("p-1", { paymentId: "p-1", cents: 100 }),
      event("p-2", { paymentId: "p-2", cents: "not a long" }), // does not fit the schema
      event("p-2", { paymentId: "p-2", cents: 5 }), // waits behind its aggregate's rejected event
      event("p-3", { paymentId: "p-3", cents: 1 }, "lookup-only"), // not registered, not allowed to register
      event("p-4", { paymentId: "p-4", cents: 7 }),
    ];
    const tap = await tapTopics([topic], name("tap"));
    try {
      const outcomes = await publisher.publish(events);
      expect(outcomes.map((o) => [o.status, o.status === "published" ? "" : o.error.name])).toEqual([
        ["published", ""],
        ["rejected", "UnencodableValueError"],
        ["failed", "PublishFailedError"],
        ["rejected", "UnknownSchemaError"],
        ["published", ""],
      ]);
      const got = await tap.take(topic, 2);
      const sr = new SchemaRegistryClient({ baseURLs: [registry.url] });
      const vendor = new AvroDeserializer(sr, SerdeType.VALUE, {});
      const ours = avro({ registry: client });
      // p-1 and p-4 are different aggregates, so different partitions: compare without order.
      const decoded: { vendor: unknown; ours: unknown }[] = [];
      for (const r of got) {
        const value = r.message.value!;
        expect(readConfluentFrame(value).schemaId).toBe(1);
        expect(r.message.headers![OUTBOX_SCHEMA_HEADER]!.toString()).toBe("payment-captured");
        decoded.push({
          vendor: { ...(await vendor.deserialize(topic, value)) },
          ours: { ...((await ours.decode(value)) as object) },
        });
      }
      const byId = (a: { paymentId: string }, b: { paymentId: string }) =>
        a.paymentId.localeCompare(b.paymentId);
      const expected = [
        { paymentId: "p-1", cents: 100 },
        { paymentId: "p-4", cents: 7 },
      ];
      expect(decoded.map((d) => d.vendor as { paymentId: string }).sort(byId)).toEqual(expected);
      expect(decoded.map((d) => d.ours as { paymentId: string }).sort(byId)).toEqual(expected);
    } finally {
      await tap.stop();
    }
  });
});
