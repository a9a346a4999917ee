import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  createRetryLadder,
  disconnectAllKafkaProducers,
  getKafkaProducer,
  type KafkaRecordHandler,
} from "reliable-consumers/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKafkaBatchProcessor, type KafkaConsumerOptions } from "../../lib/kafka/kafkaBatchProcessor.ts";
import { ladderTopics } from "../../lib/kafka/retryLadder.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { dynamodb } from "../support/clients.ts";
import { lambdaContext, recordingTelemetry, tapTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

// Issue 14 item 11 (binary header values) and issue 16 item 3 (tombstones), through the consumer
// against the local Kafka and DynamoDB: only what the handler cannot use is dead-lettered.

const name = names(import.meta.url);
const ddb: DynamoDBClient = dynamodb();
const table = name("dedup");
const ladder = createRetryLadder({ delays: ["150ms"] });
const b64 = (s: string) => Buffer.from(s).toString("base64");

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await disconnectAllKafkaProducers();
  await deleteTable(ddb, table);
});

function processor<T>(handler: KafkaRecordHandler<T>, over: Partial<KafkaConsumerOptions<T>> = {}) {
  const telemetry = recordingTelemetry();
  return createKafkaBatchProcessor(handler, {
    consumer: "bytes-test",
    idempotency: { tableName: table, scope: name(`scope-${Math.random()}`) },
    retry: ladder,
    producer: getKafkaProducer(),
    dynamodbClient: ddb,
    telemetry,
    ...over,
  });
}

const TRACE = [0x00, 0xff, 0x10, 0x80]; // not UTF-8

function batch(topic: string) {
  const base = { topic, partition: 0, timestamp: Date.now(), timestampType: "CREATE_TIME" };
  return {
    eventSource: "aws:kafka",
    records: {
      [`${topic}-0`]: [
        {
          ...base,
          offset: 0,
          key: b64("a"),
          value: b64('{"n":0}'),
          headers: [{ trace: TRACE }, { t: [104, 105] }],
        },
        { ...base, offset: 1, key: b64("b"), value: null, headers: [] },
        { ...base, offset: 2, key: b64("c"), value: b64('{"n":2}'), headers: [] },
      ],
    },
  };
}

describe("binary headers and tombstones through the Kafka consumer", () => {
  it("a handler that uses the bytes of a binary header processes the record", async () => {
    const topic = name("bin-ok");
    const seen: unknown[] = [];
    const run = processor<{ n: number } | null>(async (env) => {
      seen.push([
        env.body,
        env.tombstone,
        env.headerBytes.trace ? [...env.headerBytes.trace] : null,
        env.headers.t,
      ]);
    });
    expect(await run(batch(topic), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(seen).toEqual([
      [{ n: 0 }, false, TRACE, "hi"],
      [null, true, null, undefined],
      [{ n: 2 }, false, null, undefined],
    ]);
  });

  it("a handler that needs the text of a binary header parks that record alone, with its original bytes", async () => {
    const topic = name("bin-text");
    const tap = await tapTopics([`${topic}.DLQ`, ...ladderTopics(ladder, topic).retry], name("tap"));
    try {
      const done: number[] = [];
      const run = processor<{ n: number } | null>(async (env, { record }) => {
        if (!env.tombstone) void env.headers.trace?.length;
        done.push(record.offset);
      });
      expect(await run(batch(topic), lambdaContext())).toEqual({ batchItemFailures: [] });
      expect(done).toEqual([1, 2]);
      const [dead] = await tap.take(`${topic}.DLQ`, 1);
      const h = dead!.message.headers!;
      expect(h["x-original-offset"]?.toString()).toBe("0");
      expect(h["x-last-error"]?.toString()).toMatch(/^BinaryHeaderError: header 'trace' is not UTF-8 text/);
      expect([...(h.trace as Buffer)]).toEqual(TRACE);
      expect(dead!.message.value?.toString()).toBe('{"n":0}');
      expect(tap.pending(`${topic}.DLQ`)).toBe(0);
    } finally {
      await tap.stop();
    }
  });

  it("tombstones: 'skip' acknowledges them without calling the handler", async () => {
    const topic = name("tomb-skip");
    const done: number[] = [];
    const run = processor(
      async (_env, { record }) => {
        done.push(record.offset);
      },
      { tombstones: "skip" },
    );
    expect(await run(batch(topic), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(done).toEqual([0, 2]);
  });
});
