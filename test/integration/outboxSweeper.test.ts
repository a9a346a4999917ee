import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeleteQueueCommand } from "@aws-sdk/client-sqs";
import type { DynamoDBRecord } from "aws-lambda";
import { createInboxOutbox, createOutboxSweeper, requeueParked } from "reliable-consumers/outbox";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pendingShard } from "../../lib/outbox/outboxEvent.ts";
import { OUTBOX_DEFAULTS } from "../../lib/outbox/schema.ts";
import { createAppTable } from "../../local/src/services/dynamodb/appTable.ts";
import { deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { names } from "../support/names.ts";
import {
  byPrefix,
  createQueue,
  envelopeOf,
  receiveAll,
  scanAll,
  streamTrigger,
} from "../support/outboxHarness.ts";
import { recordingTelemetry } from "../support/telemetry.ts";

const name = names(import.meta.url);
const ddb = new DynamoDBClient({});
const sqs = createSqsClient();
const table = name("app");
let streamArn: string;
let fifo: string;

beforeAll(async () => {
  streamArn = await createAppTable(ddb, table);
  fifo = await createQueue(sqs, name("events.fifo"));
});
afterAll(async () => {
  await deleteTable(ddb, table);
  await sqs.send(new DeleteQueueCommand({ QueueUrl: fifo })).catch(() => {});
});

describe("outbox sweeper", () => {
  it("publishes what a relay that was down past the stream window never did; pending count and age rise, then fall", async () => {
    let clock = Date.now();
    const now = () => clock;
    const telemetry = recordingTelemetry();
    const sweeper = createOutboxSweeper({
      tableName: table,
      client: ddb,
      minAgeMs: 10 * 60_000,
      now,
      telemetry,
    });
    expect(await sweeper.measure()).toEqual({ pendingCount: 0, oldestPendingAgeMs: 0 });

    const uow = createInboxOutbox({
      tableName: table,
      scope: "sw",
      client: ddb,
      defaultDestination: `sqs:${fifo}`,
      now,
    });
    const aggregates = ["A", "B", "C"];
    for (let v = 1; v <= 5; v++) {
      for (const agg of aggregates) {
        await uow.run(envelopeOf(`${agg}-${v}`, {}), (tx) => {
          tx.publish({ aggregateType: "acct", aggregateId: agg, eventType: "Changed", payload: { agg, v } });
        });
      }
      clock += 1000;
    }
    const written = clock;

    // The relay is broken: every invocation fails until the mapping gives up (records discarded).
    const discarded: DynamoDBRecord[] = [];
    const stats = await streamTrigger(
      streamArn,
      async () => {
        throw new Error("relay is down");
      },
      { maximumRetryAttempts: 2, onDiscard: (r) => discarded.push(...r) },
    ).drain();
    expect(stats.discarded).toBe(15);

    // A day passes (past the 24 h stream retention): the backlog is visible and old.
    clock = written + 25 * 3600_000;
    const before = await sweeper.measure();
    expect(before.pendingCount).toBe(15);
    expect(before.oldestPendingAgeMs).toBeGreaterThanOrEqual(25 * 3600_000);

    const report = await sweeper.sweep();
    expect(report).toMatchObject({
      due: 15,
      republished: 15,
      parked: 0,
      failed: 0,
      pendingCount: 0,
      oldestPendingAgeMs: 0,
    });
    expect(telemetry.counts.OutboxPendingCount).toBe(0);
    expect(telemetry.counts.OutboxRepublished).toBe(15);

    const delivered = (await receiveAll(sqs, fifo)).map(
      (m) => JSON.parse(m.Body!) as { agg: string; v: number },
    );
    for (const agg of aggregates) {
      expect(delivered.filter((d) => d.agg === agg).map((d) => d.v)).toEqual([1, 2, 3, 4, 5]);
    }
    const items = byPrefix(await scanAll(ddb, table), "OUTBOX#");
    expect(items.every((i) => i.pending === undefined && i.publishedBy?.S === "sweeper")).toBe(true);
    // Pending for 25 h without a TTL; the retention (7 days by default) starts at publication.
    const retention = 7 * 24 * 3600;
    expect(items.map((i) => Number(i.expiresAt?.N))).toEqual(
      items.map(() => Math.floor(clock / 1000) + retention),
    );
  });

  it("leaves young events to the relay, parks the unpublishable, and republishes a parked event after requeue", async () => {
    let clock = Date.now();
    const now = () => clock;
    const sweeper = createOutboxSweeper({ tableName: table, client: ddb, minAgeMs: 60_000, now });
    const uow = createInboxOutbox({ tableName: table, scope: "sw2", client: ddb, now });
    let lostId = "";
    await uow.run(envelopeOf("young-1", {}), (tx) => {
      tx.publish({
        aggregateType: "y",
        aggregateId: "1",
        eventType: "E",
        payload: 1,
        destination: `sqs:${fifo}`,
      });
      lostId = tx.publish({
        aggregateType: "y",
        aggregateId: "2",
        eventType: "E",
        payload: 2,
        destination: "nowhere",
      });
    });
    expect((await sweeper.sweep()).due).toBe(0); // younger than minAgeMs: the relay's job
    clock += 120_000;
    const report = await sweeper.sweep();
    expect(report).toMatchObject({ due: 2, republished: 1, parked: 1, pendingCount: 0 });
    expect((await receiveAll(sqs, fifo)).map((m) => m.Body)).toEqual(["1"]);

    // After the fix: requeue the parked event with a destination that exists.
    const ok = await requeueParked(
      ddb,
      table,
      { pk: "OUTBOX#y#2", sk: `EVENT#${lostId}` },
      {
        shard: pendingShard("y", "2", OUTBOX_DEFAULTS.pendingShards),
        destination: `sqs:${fifo}`,
        now: clock,
      },
    );
    expect(ok).toBe(true);
    expect((await sweeper.measure()).pendingCount).toBe(1);
    clock += 120_000;
    expect(await sweeper.sweep()).toMatchObject({ republished: 1, pendingCount: 0 });
    expect((await receiveAll(sqs, fifo)).map((m) => m.Body)).toEqual(["2"]);
  });
});
