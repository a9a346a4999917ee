import type { KafkaMessage } from "kafkajs";
import { describe, expect, it } from "vitest";
import { kafkaBatchInfo } from "../../src/services/kafka/failureSink.ts";
import {
  deserializeFetch,
  filterFetch,
  type HandedRecord,
  type HandedRecords,
} from "../../src/services/kafka/handedRecords.ts";
import { failedIndexIn } from "../../src/services/kafka/partitionSource.ts";
import { holdBackoffMs, retryHolding } from "../../src/services/kafka/retryHolding.ts";
import type { DeserializedRecord } from "../../src/services/kafka/schemaRegistry.ts";

const message = (offset: number, value: unknown): KafkaMessage => ({
  key: Buffer.from(`k${offset}`),
  value: Buffer.from(JSON.stringify(value)),
  timestamp: String(1_000 + offset),
  attributes: 0,
  offset: String(offset),
  headers: {},
});

describe("the Kafka mapping's stages, without a broker (services/kafka)", () => {
  it("holds a refused call with the stream backoff, warns once, and gives up when stopped", async () => {
    const waits: number[] = [];
    const warnings: string[] = [];
    let calls = 0;
    const held = await retryHolding(
      async () => {
        if (++calls < 4) throw new Error(`refused ${calls}`);
        return "took it";
      },
      {
        stopped: () => false,
        pause: async (ms) => void waits.push(ms),
        refused: (e) => warnings.push(e.message),
      },
    );
    expect(held).toEqual({ done: true, value: "took it" });
    expect(waits).toEqual([200, 400, 800]);
    expect(warnings).toEqual(["refused 1"]);
    expect([5, 6, 20].map(holdBackoffMs)).toEqual([5_000, 5_000, 5_000]);

    let stop = false;
    const given = await retryHolding(
      async () => {
        stop = true;
        throw new Error("away");
      },
      { stopped: () => stop, pause: async () => undefined, refused: () => undefined },
    );
    expect(given).toEqual({ done: false });
  });

  it("names the failed record by `{ partition: topic-partition, offset }`, else fails the batch whole", () => {
    const batch = [message(5, 1), message(6, 2), message(7, 3)];
    expect(failedIndexIn("t-0", { itemIdentifier: { partition: "t-0", offset: 6 } }, batch)).toBe(1);
    expect(failedIndexIn("t-0", { itemIdentifier: { partition: "t-0", offset: "7" } }, batch)).toBe(2);
    expect(failedIndexIn("t-0", { itemIdentifier: { partition: "t-1", offset: 6 } }, batch)).toBe(-1);
    expect(failedIndexIn("t-0", { itemIdentifier: { partition: "t-0", offset: 9 } }, batch)).toBe(-1);
    expect(failedIndexIn("t-0", null, batch)).toBe(-1);
  });

  it("describes discarded records to an SQS destination by where they were, not by their content", () => {
    const batch = [message(5, "a"), message(6, "bb")];
    expect(kafkaBatchInfo("t", 0, batch, "b1:9092,b2:9092")).toEqual({
      batchSize: 2,
      bootstrapServers: "b1:9092,b2:9092",
      payloadSize: batch[0]!.value!.length + batch[1]!.value!.length,
      recordsInfo: {
        "t-0": {
          firstRecordOffset: "5",
          firstRecordTimestamp: "1005",
          lastRecordOffset: "6",
          lastRecordTimestamp: "1006",
        },
      },
    });
  });

  it("filters each record as the function would see it (the registry's form), counting the rest", () => {
    const polled = [message(0, { kind: "raw" }), message(1, { kind: "drop" })];
    const handed: HandedRecords = new WeakMap();
    // The registry made the first record a JSON document the filter matches; the polled bytes do not.
    handed.set(polled[0]!, { ok: true, message: message(0, { kind: "keep" }) });
    const { pass, filtered } = filterFetch([{ value: { kind: ["keep"] } }], "t", 0, polled, handed);
    expect(pass).toEqual([polled[0]]);
    expect(filtered).toBe(1);
    expect(filterFetch([], "t", 0, polled, handed)).toEqual({ pass: polled, filtered: 0 });
  });

  it("hands over what deserializes and discards the rest with Lambda's reason, before anything later", async () => {
    const polled = [message(0, "good"), message(1, "bad"), message(2, "unknown")];
    const verdicts: DeserializedRecord[] = [
      { ok: true, message: message(0, { decoded: true }) },
      { ok: false, condition: "DESERIALIZATION_ERROR", error: new Error("bad bytes") },
      { ok: false, condition: "SCHEMA_NOT_FOUND", error: new Error("no schema 9") },
    ];
    const discarded: Array<[string, string[]]> = [];
    const handed: HandedRecords = new WeakMap();
    const options = {
      deserializer: { deserialize: async (m: KafkaMessage) => verdicts[Number(m.offset)]! },
      handed,
      logicalId: "Mapping",
      discard: async (_t: string, _p: number, list: KafkaMessage[], condition: string) => {
        discarded.push([condition, list.map((m) => m.offset)]);
        return true;
      },
      pause: async () => undefined,
    };
    expect(await deserializeFetch("t", 0, polled, () => false, options)).toEqual([polled[0]]);
    expect((handed.get(polled[0]!) as HandedRecord).message.value?.toString()).toBe('{"decoded":true}');
    expect(discarded).toEqual([
      ["DESERIALIZATION_ERROR", ["1"]],
      ["SCHEMA_NOT_FOUND", ["2"]],
    ]);
    // A destination that does not take them: nothing is handed over, so nothing later is committed.
    expect(
      await deserializeFetch("t", 0, polled, () => false, { ...options, discard: async () => false }),
    ).toBe(undefined);
    // Without a registry: every record as polled.
    expect(await deserializeFetch("t", 0, polled, () => false, { ...options, deserializer: undefined })).toBe(
      polled,
    );
  });
});
