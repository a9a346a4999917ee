import { describe, expect, it } from "vitest";
import { replayMessage } from "../../lib/dlq/replayMessage.ts";
import { readKafkaEvent } from "../../lib/kafka/mskEvent.ts";
import { routedMessage } from "../../lib/kafka/routedMessage.ts";

const bytes = (s: string) => [...Buffer.from(s)];

function view(topic: string, headers: Record<string, string>) {
  return readKafkaEvent({
    eventSource: "aws:kafka",
    records: {
      [`${topic}-1`]: [
        {
          topic,
          partition: 1,
          offset: 77,
          timestamp: 0,
          key: Buffer.from([0xff, 0x00]).toString("base64"), // binary key: forwarded byte for byte
          value: Buffer.from("v").toString("base64"),
          headers: Object.entries(headers).map(([k, v]) => ({ [k]: bytes(v) })),
        },
      ],
    },
  })[0]!;
}

describe("the copy that goes to a retry or dead-letter topic", () => {
  const now = new Date("2026-11-30T12:00:00.000Z");

  it("on a first failure: the record's own coordinates, the user's headers, and the context", () => {
    const m = routedMessage({
      record: view("orders", { trace: "t1" }),
      route: { kind: "retry", topic: "orders.retry.5s", retryCount: 1, delayMs: 5000 },
      error: new TypeError("boom"),
      messageId: "orders:1:77",
      consumer: "payments",
      now,
    });
    expect(m.key).toEqual(Buffer.from([0xff, 0x00]));
    expect(m.timestamp).toBe(now.getTime());
    expect(Object.fromEntries(m.headers.map((h) => [h.name, h.value.toString()]))).toEqual({
      trace: "t1",
      "x-original-topic": "orders",
      "x-original-partition": "1",
      "x-original-offset": "77",
      "x-retry-count": "1",
      "x-first-failed-at": now.toISOString(),
      "x-last-error": "TypeError: boom",
      "x-message-id": "orders:1:77",
      "x-consumer": "payments",
    });
  });

  it("keeps every header of a repeated name, in order (issue 34 item 4)", () => {
    const [record] = readKafkaEvent({
      eventSource: "aws:kafka",
      records: {
        "orders-0": [
          {
            topic: "orders",
            partition: 0,
            offset: 1,
            timestamp: 0,
            value: Buffer.from("v").toString("base64"),
            headers: [
              { a: bytes("1") },
              { b: bytes("2") },
              { a: bytes("3") },
              { "x-retry-count": bytes("7") },
            ],
          },
        ],
      },
    });
    const m = routedMessage({
      record: record!,
      route: { kind: "retry", topic: "orders.retry.5s", retryCount: 1, delayMs: 5000 },
      error: new Error("x"),
      messageId: "m",
      consumer: "c",
      now,
    });
    const user = m.headers.filter((h) => !h.name.startsWith("x-")).map((h) => `${h.name}=${h.value}`);
    expect(user).toEqual(["a=1", "b=2", "a=3"]);
    // The context headers are the copy's own, once each.
    expect(m.headers.filter((h) => h.name === "x-retry-count").map((h) => String(h.value))).toEqual(["1"]);
  });

  it("on a later failure: keeps the original coordinates and first failure, replaces the rest", () => {
    const m = routedMessage({
      record: view("orders.retry.5s", {
        "x-original-topic": "orders",
        "x-original-partition": "3",
        "x-original-offset": "12",
        "x-first-failed-at": "2026-11-30T11:00:00.000Z",
        "x-retry-count": "1",
        "x-last-error": "old",
        "x-message-id": "m-1",
      }),
      route: { kind: "dead-letter", topic: "orders.DLQ", retryCount: 2, reason: "permanent" },
      error: new Error("declined"),
      messageId: "m-1",
      consumer: "payments",
      now,
    });
    const h = (n: string) => m.headers.find((x) => x.name === n)?.value.toString();
    expect([h("x-original-topic"), h("x-original-partition"), h("x-original-offset")]).toEqual([
      "orders",
      "3",
      "12",
    ]);
    expect(h("x-first-failed-at")).toBe("2026-11-30T11:00:00.000Z");
    expect([h("x-retry-count"), h("x-last-error")]).toEqual(["2", "Error: declined"]);
  });

  it("a replay keeps the id and original coordinates and drops the attempt's context", () => {
    const dlqHeaders: Record<string, Buffer | Buffer[]> = {
      a: [Buffer.from("1"), Buffer.from("3")],
      "x-original-topic": Buffer.from("orders"),
      "x-original-offset": Buffer.from("12"),
      "x-retry-count": Buffer.from("4"),
      "x-first-failed-at": Buffer.from("t"),
      "x-last-error": Buffer.from("E: x"),
      "x-consumer": Buffer.from("payments"),
      "x-message-id": Buffer.from("m-1"),
      trace: Buffer.from("t1"),
    };
    const m = replayMessage(
      {
        topic: "orders.DLQ",
        partition: 0,
        offset: "5",
        message: {
          key: Buffer.from("k"),
          value: Buffer.from("v"),
          headers: dlqHeaders,
          timestamp: "0",
          offset: "5",
          attributes: 0,
        },
      },
      new Date(0),
    );
    expect(m.headers.filter((h) => h.name === "a").map((h) => String(h.value))).toEqual(["1", "3"]);
    expect(m.headers.map((h) => h.name).sort()).toEqual([
      "a",
      "a",
      "trace",
      "x-message-id",
      "x-original-offset",
      "x-original-topic",
      "x-replayed-at",
      "x-replayed-from",
    ]);
    expect(m.headers.find((h) => h.name === "x-replayed-from")?.value).toBe("orders.DLQ:0:5");
  });
});
