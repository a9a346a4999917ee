import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DEDUP_TABLE } from "reliable-consumers";
import { disconnectAllKafkaProducers } from "reliable-consumers/kafka";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { dynamodb } from "../support/clients.ts";
import { lambdaContext, tapTopics } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

const name = names(import.meta.url);
const ddb = dynamodb();
const table = name("dedup");
const topic = name("order-events");
const b64 = (s: string) => Buffer.from(s).toString("base64");

beforeAll(async () => {
  await createDedupTable(ddb, table);
  Object.assign(process.env, {
    DEDUP_TABLE_NAME: table,
    // The CDK's declaration, with short delays for the test.
    KAFKA_RETRY_LADDER: JSON.stringify({
      topic,
      retries: [{ topic: `${topic}.retry.100ms`, delayMs: 100 }],
      deadLetterTopic: `${topic}.DLQ`,
    }),
    POWERTOOLS_LOG_LEVEL: "SILENT",
    POWERTOOLS_METRICS_DISABLED: "true",
  });
});
afterAll(async () => {
  await disconnectAllKafkaProducers();
  await deleteTable(ddb, table);
});

describe("functions/payment-consumer", () => {
  it("charges each order once, and dead-letters declines and bad events with context", async () => {
    const { handler, gateway } = await import("../../functions/payment-consumer/handler.ts");
    const charge = vi.spyOn(gateway, "charge");
    const order = (offset: number, orderId: string, amountCents: number, raw?: string) => ({
      topic,
      partition: 0,
      offset,
      timestamp: Date.now(),
      timestampType: "CREATE_TIME",
      key: b64(orderId),
      value: b64(raw ?? JSON.stringify({ orderId, customerId: "c-1", amountCents, items: [] })),
      headers: [
        { "message-id": [...Buffer.from(`evt-${offset}`)] },
        { "event-type": [...Buffer.from("OrderPlaced")] },
      ],
    });
    const event = {
      eventSource: "aws:kafka",
      records: {
        [`${topic}-0`]: [
          order(0, "o-1", 1_500),
          order(1, "o-2", 99_000_000), // over the stub provider's limit: declined
          order(2, "o-3", 2_000, "{not json"),
          order(3, "o-1", 1_500), // the same order again (a resend): charged once
          order(4, "o-4", 700),
        ],
      },
    };
    const tap = await tapTopics([`${topic}.DLQ`], name("tap"));
    try {
      expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
      expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] }); // a redelivery
      const dead = await tap.take(`${topic}.DLQ`, 2);
      expect(dead.map((d) => d.message.headers?.["x-last-error"]?.toString().split(":")[0]).sort()).toEqual([
        "InvalidJsonError",
        "PaymentDeclinedError",
      ]);
      expect(dead.every((d) => d.message.headers?.["x-consumer"]?.toString() === "payment-consumer")).toBe(
        true,
      );
      // o-2 and o-3 were dead-lettered once: their redelivery is recognised by its recorded route.
      expect(charge.mock.calls.map(([c]) => c.orderId).sort()).toEqual(["o-1", "o-2", "o-4"]);
      // A replay (the DLQ tool republishes it: new coordinates) is processed again, as after a fix.
      const replay = { eventSource: "aws:kafka", records: { [`${topic}-0`]: [order(5, "o-2", 99_000_000)] } };
      expect(await handler(replay, lambdaContext())).toEqual({ batchItemFailures: [] });
      expect((await tap.take(`${topic}.DLQ`, 1)).length).toBe(1);
      expect(tap.pending(`${topic}.DLQ`)).toBe(0);
    } finally {
      await tap.stop();
    }
    const charged = charge.mock.calls.map(([c]) => c.orderId);
    // o-1 and o-4 charged once each despite the resend and the redelivery; o-2 once per delivery
    // that was not a redelivery of a dead-lettered one (the first, and the replay).
    expect(charged.sort()).toEqual(["o-1", "o-2", "o-2", "o-4"]);
    expect(charge.mock.calls.find(([c]) => c.orderId === "o-1")![0].idempotencyKey).toBe("payment:o-1");
  });

  it("DEDUP_LEASE_MS sets the lease of a charge's claim, and a bad one fails at init", async () => {
    // Chaos scenario 11 shortens the lease a killed environment leaves (chaos/crashScenario.ts).
    const load = async (leaseMs: string) => {
      vi.resetModules();
      process.env.DEDUP_LEASE_MS = leaseMs;
      try {
        return await import("../../functions/payment-consumer/handler.ts");
      } finally {
        delete process.env.DEDUP_LEASE_MS;
      }
    };
    await expect(load("10s")).rejects.toThrow(/DEDUP_LEASE_MS/);
    const { handler, gateway } = await load("7000");
    // The lease as the claim wrote it, read while the charge runs.
    let leaseLeftMs: number | undefined;
    vi.spyOn(gateway, "charge").mockImplementation(async () => {
      const pk = DEDUP_TABLE.pk("payment-consumer", "payment:o-lease");
      const item = await ddb.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk } } }));
      leaseLeftMs = Number(item.Item?.[DEDUP_TABLE.attributes.leaseExpiresAt]?.N) - Date.now();
      return { paymentId: "p-lease" };
    });
    const value = { orderId: "o-lease", customerId: "c-1", amountCents: 100 };
    const event = {
      eventSource: "aws:kafka",
      records: {
        [`${topic}-1`]: [
          {
            topic,
            partition: 1,
            offset: 0,
            timestamp: Date.now(),
            timestampType: "CREATE_TIME",
            key: b64("o-lease"),
            value: b64(JSON.stringify(value)),
            headers: [],
          },
        ],
      },
    };
    expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    // Claimed for 7 s (at most that left whenever it is read), not the default 30 s.
    expect(Number.isFinite(leaseLeftMs)).toBe(true);
    expect(leaseLeftMs).toBeLessThanOrEqual(7_000);
  });
});
