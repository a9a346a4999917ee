import { AvroSerializer, SchemaRegistryClient, SerdeType } from "@confluentinc/schemaregistry";
import {
  avro,
  confluentRegistry,
  createRetryLadder,
  disconnectAllKafkaProducers,
  getKafkaProducer,
  type KafkaRecordHandler,
} from "reliable-consumers/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createKafkaBatchProcessor, type KafkaConsumerOptions } from "../../lib/kafka/kafkaBatchProcessor.ts";
import { ladderTopics } from "../../lib/kafka/retryLadder.ts";
import { writeConfluentFrame } from "../../lib/kafka/schemas/wireFormat.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { PaymentV1 } from "../fixtures/schemas/payment.ts";
import { dynamodb } from "../support/clients.ts";
import { type ConfluentStandIn, startConfluentStandIn } from "../support/confluentRegistryStandIn.ts";
import { lambdaContext, recordingTelemetry, tapTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

// Issue 16 item 5 through the consumer, against the local Kafka and DynamoDB and the Confluent
// registry stand-in: each bad input is parked on the DLQ topic with its typed error and its original
// bytes, the rest of the batch goes on; an unreachable registry is retried, never dead-lettered.

const name = names(import.meta.url);
const ddb = dynamodb();
const table = name("dedup");
const ladder = createRetryLadder({ delays: ["150ms", "300ms"] });
let registry: ConfluentStandIn;
let client: SchemaRegistryClient;

beforeAll(async () => {
  registry = await startConfluentStandIn();
  client = new SchemaRegistryClient({ baseURLs: [registry.url] });
  await createDedupTable(ddb, table);
});
afterAll(async () => {
  await disconnectAllKafkaProducers();
  await deleteTable(ddb, table);
  await registry.stop();
});

type Payment = { id: string; amount: number };

function processor(handler: KafkaRecordHandler<Payment>, over: Partial<KafkaConsumerOptions<Payment>> = {}) {
  return createKafkaBatchProcessor<Payment>(handler, {
    consumer: "schemas-test",
    idempotency: { tableName: table, scope: name(`scope-${Math.random()}`) },
    retry: ladder,
    producer: getKafkaProducer(),
    dynamodbClient: ddb,
    telemetry: recordingTelemetry(),
    parse: avro({ registry: confluentRegistry({ url: registry.url, timeoutMs: 2000 }) }),
    schema: z.object({ id: z.string(), amount: z.number().nonnegative() }),
    lambdaSchemaRegistry: false,
    ...over,
  });
}

function event(topic: string, values: Buffer[], headers: Record<string, string>[] = []) {
  return {
    eventSource: "aws:kafka",
    records: {
      [`${topic}-0`]: values.map((v, offset) => ({
        topic,
        partition: 0,
        offset,
        timestamp: Date.now(),
        key: Buffer.from(`k${offset}`).toString("base64"),
        value: v.toString("base64"),
        headers: Object.entries(headers[offset] ?? {}).map(([k, h]) => ({ [k]: [...Buffer.from(h)] })),
      })),
    },
  };
}

describe("Avro records through the Kafka consumer with a Confluent registry", () => {
  it("parks each bad input with its typed error and original bytes; good records run", async () => {
    const topic = name("avro-bad");
    const id = await client.register(`${topic}-value`, {
      schemaType: "AVRO",
      schema: JSON.stringify(PaymentV1),
    });
    const ser = new AvroSerializer(client, SerdeType.VALUE, { useSchemaId: id });
    const good = await ser.serialize(topic, { id: "g-1", amount: 5 });
    const negative = await ser.serialize(topic, { id: "n-1", amount: -5 });
    const wrongMagic = Buffer.from(good);
    wrongMagic[0] = 1;
    const unknownId = writeConfluentFrame(424242, good.subarray(5));
    const truncated = good.subarray(0, good.length - 1);
    const values = [
      good,
      wrongMagic,
      unknownId,
      truncated,
      negative,
      await ser.serialize(topic, { id: "g-2", amount: 6 }),
    ];
    const tap = await tapTopics([`${topic}.DLQ`], name("tap-bad"));
    try {
      const seen: string[] = [];
      const run = processor(async (env) => {
        seen.push(env.body.id);
      });
      expect(await run(event(topic, values), lambdaContext())).toEqual({ batchItemFailures: [] });
      expect(seen).toEqual(["g-1", "g-2"]);
      const dead = await tap.take(`${topic}.DLQ`, 4);
      const byOffset = Object.fromEntries(
        dead.map((d) => [
          d.message.headers!["x-original-offset"]!.toString(),
          {
            error: d.message.headers!["x-last-error"]!.toString().split(":")[0],
            value: d.message.value!.toString("hex"),
          },
        ]),
      );
      expect(byOffset).toEqual({
        "1": { error: "WireFormatError", value: wrongMagic.toString("hex") },
        "2": { error: "UnknownSchemaError", value: unknownId.toString("hex") },
        "3": { error: "UndecodableRecordError", value: truncated.toString("hex") },
        "4": { error: "SchemaValidationError", value: negative.toString("hex") },
      });
    } finally {
      await tap.stop();
    }
  });

  it("an unreachable registry sends records round the ladder without using an attempt, never to the DLQ", async () => {
    const topic = name("avro-down");
    const id = await client.register(`${topic}-value`, {
      schemaType: "AVRO",
      schema: JSON.stringify(PaymentV1),
    });
    const ser = new AvroSerializer(client, SerdeType.VALUE, { useSchemaId: id });
    const bytes = await ser.serialize(topic, { id: "d-1", amount: 1 });
    const { retry, deadLetter } = ladderTopics(ladder, topic);
    const lastRung = retry[retry.length - 1]!;
    const tap = await tapTopics([...retry, deadLetter], name("tap-down"));
    registry.mode = "unavailable";
    const telemetry = recordingTelemetry();
    try {
      const run = processor(
        async () => {
          throw new Error("the handler must not run without a decoded value");
        },
        { telemetry },
      );
      expect(await run(event(topic, [bytes]), lambdaContext())).toEqual({ batchItemFailures: [] });
      const [first] = await tap.take(retry[0]!, 1);
      expect(first!.message.headers!["x-last-error"]!.toString()).toMatch(/^SchemaRegistryUnavailableError/);
      expect(first!.message.headers!["x-retry-count"]!.toString()).toBe("0");
      expect(first!.message.value!.toString("hex")).toBe(bytes.toString("hex"));
      // Even a copy that has used every attempt stays on the ladder while the registry is down.
      const exhausted = event(
        lastRung,
        [bytes],
        [{ "x-retry-count": String(retry.length), "x-original-topic": topic, "x-message-id": "d-1" }],
      );
      const old = { ...exhausted.records[`${lastRung}-0`]![0]!, timestamp: Date.now() - 60_000 };
      expect(await run({ ...exhausted, records: { [`${lastRung}-0`]: [old] } }, lambdaContext())).toEqual({
        batchItemFailures: [],
      });
      const [again] = await tap.take(lastRung, 1);
      expect(again!.message.headers!["x-retry-count"]!.toString()).toBe(String(retry.length));
      expect(tap.pending(deadLetter)).toBe(0);
      // Never dead-lettered for it, so counted for the alarm (ConsumerMonitoring.monitorKafkaLag).
      expect(telemetry.counts.SchemaRegistryUnavailable).toBe(2);
    } finally {
      registry.mode = "up";
      await tap.stop();
    }
  });
});
