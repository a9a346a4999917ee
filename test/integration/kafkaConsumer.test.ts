import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { logLevel } from "kafkajs";
import { createDedupStore, PermanentError, TransientError } from "reliable-consumers";
import {
  createRetryLadder,
  disconnectAllKafkaProducers,
  getKafkaProducer,
  type KafkaRecordHandler,
  kafkaConsumer,
} from "reliable-consumers/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MalformedRecordError } from "../../lib/core/errors.ts";
import { type KafkaDeadLetter, readTopicToEnd } from "../../lib/dlq/kafkaDeadLetters.ts";
import { KafkaBatchIncompleteError } from "../../lib/kafka/errors.ts";
import { createKafkaBatchProcessor, type KafkaConsumerOptions } from "../../lib/kafka/kafkaBatchProcessor.ts";
import { createKafkaProducer } from "../../lib/kafka/producer.ts";
import { ladderTopics } from "../../lib/kafka/retryLadder.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { toMskEvent } from "../../local/src/services/kafka/mskEventBuilder.ts";
import { dynamodb } from "../support/clients.ts";
import {
  declareLadder,
  lambdaContext,
  recordingTelemetry,
  recordsIn,
  type TopicTap,
  tapTopics,
  type WireRecord,
  wireRecords,
} from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";

const name = names(import.meta.url);
const ddb = dynamodb();
const table = name("dedup");
// Short rungs keep the suite fast; the consumer really waits for each record to come due.
const ladder = createRetryLadder({ delays: ["150ms", "300ms"] });
const b64 = (s: string) => Buffer.from(s).toString("base64");

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await disconnectAllKafkaProducers();
  await deleteTable(ddb, table);
});

function processor<T>(handler: KafkaRecordHandler<T>, over: Partial<KafkaConsumerOptions<T>> = {}) {
  const telemetry = recordingTelemetry();
  const process = createKafkaBatchProcessor(handler, {
    consumer: "payments-test",
    idempotency: { tableName: table, scope: name(`scope-${Math.random()}`) },
    retry: ladder,
    producer: getKafkaProducer(),
    dynamodbClient: ddb,
    telemetry,
    ...over,
  });
  return { process, telemetry };
}

async function withTap<R>(base: string, fn: (tap: TopicTap) => Promise<R>): Promise<R> {
  const { retry, deadLetter } = ladderTopics(ladder, base);
  const tap = await tapTopics([base, ...retry, deadLetter], name(`tap-${base}`));
  try {
    return await fn(tap);
  } finally {
    await tap.stop();
  }
}

const header = (r: { message: { headers?: Record<string, unknown> } }, h: string) =>
  (r.message.headers?.[h] as Buffer | undefined)?.toString();

describe("Kafka consumer: retry topics and dead-letter topic (against the local Kafka)", () => {
  it("fail twice, then succeed: the record travels the ladder and is processed once; redeliveries are deduplicated", async () => {
    const topic = name("pay-ladder");
    const attempts: number[] = [];
    const effects: string[] = [];
    const { process, telemetry } = processor<{ id: string }>(async (env) => {
      attempts.push(env.attempt);
      if (env.attempt <= 2) throw new TransientError(`downstream unavailable (attempt ${env.attempt})`);
      effects.push(env.body.id);
    });
    await withTap(topic, async (tap) => {
      await getKafkaProducer().send(topic, [
        { key: "p-1", value: '{"id":"p-1"}', headers: { "message-id": "m-1" } },
      ]);
      const main = toMskEvent(await tap.take(topic, 1));
      expect(await process(main, lambdaContext())).toEqual({ batchItemFailures: [] });

      const first = await tap.take(`${topic}.retry.150ms`, 1);
      expect(header(first[0]!, "x-retry-count")).toBe("1");
      const retry1 = toMskEvent(first);
      expect(await process(retry1, lambdaContext())).toEqual({ batchItemFailures: [] });

      const second = await tap.take(`${topic}.retry.300ms`, 1);
      expect(header(second[0]!, "x-retry-count")).toBe("2");
      expect(header(second[0]!, "x-first-failed-at")).toBe(header(first[0]!, "x-first-failed-at"));
      const retry2 = toMskEvent(second);
      expect(await process(retry2, lambdaContext())).toEqual({ batchItemFailures: [] });

      // Redelivery of any copy along the ladder (the broker's or Lambda's own) is a duplicate now.
      for (const again of [main, retry1, retry2]) {
        expect(await process(again, lambdaContext())).toEqual({ batchItemFailures: [] });
      }
      expect(tap.pending(`${topic}.DLQ`)).toBe(0);
    });
    expect(attempts).toEqual([1, 2, 3]);
    expect(effects).toEqual(["p-1"]);
    expect(telemetry.counts.DuplicatesSuppressed).toBe(3);
    expect(telemetry.counts.RoutedToRetry).toBe(2);
  });

  it("fail always: the record ends in the dead-letter topic with every context header", async () => {
    const topic = name("pay-dlq");
    const { process } = processor(async () => {
      throw new Error("card processor down");
    });
    await withTap(topic, async (tap) => {
      await getKafkaProducer().send(topic, [{ key: "k", value: '{"n":1}', headers: { trace: "t-1" } }]);
      const [original] = await tap.take(topic, 1);
      await process(toMskEvent([original!]), lambdaContext());
      await process(toMskEvent(await tap.take(`${topic}.retry.150ms`, 1)), lambdaContext());
      await process(toMskEvent(await tap.take(`${topic}.retry.300ms`, 1)), lambdaContext());
      const [dead] = await tap.take(`${topic}.DLQ`, 1);
      const h = (n: string) => header(dead!, n);
      expect({
        topic: h("x-original-topic"),
        partition: h("x-original-partition"),
        offset: h("x-original-offset"),
        retryCount: h("x-retry-count"),
        lastError: h("x-last-error"),
        messageId: h("x-message-id"),
        consumer: h("x-consumer"),
        trace: h("trace"),
      }).toEqual({
        topic,
        partition: String(original!.partition),
        offset: original!.message.offset,
        retryCount: "3",
        lastError: "Error: card processor down",
        messageId: `${topic}:${original!.partition}:${original!.message.offset}`,
        consumer: "payments-test",
        trace: "t-1",
      });
      expect(Number.isNaN(Date.parse(h("x-first-failed-at")!))).toBe(false);
      expect(dead!.message.key?.toString()).toBe("k");
      expect(dead!.message.value?.toString()).toBe('{"n":1}');
    });
  });

  it("a permanent error goes straight to the dead-letter topic", async () => {
    const topic = name("pay-perm");
    const { process, telemetry } = processor(async () => {
      throw new PermanentError("card number fails the Luhn check");
    });
    await withTap(topic, async (tap) => {
      await getKafkaProducer().send(topic, [{ key: "k", value: "{}" }]);
      await process(toMskEvent(await tap.take(topic, 1)), lambdaContext());
      const [dead] = await tap.take(`${topic}.DLQ`, 1);
      expect(header(dead!, "x-retry-count")).toBe("1");
      expect(header(dead!, "x-last-error")).toBe("PermanentError: card number fails the Luhn check");
      expect(tap.pending(`${topic}.retry.150ms`)).toBe(0);
    });
    expect(telemetry.counts.DeadLettered).toBe(1);
    expect(telemetry.counts.RoutedToRetry).toBeUndefined();
  });

  it("keeps repeated header names, in order, on the retry and dead-letter copies (issue 34 item 4)", async () => {
    // Kafka lets a name repeat; the copies kept only the last value of each name (a=3, b=2).
    const topic = name("pay-headers");
    await declareLadder(ladder, topic);
    const { process } = processor(async (env) => {
      if (env.attempt === 1) throw new TransientError("issuer timeout");
      throw new PermanentError("declined");
    });
    const bytes = (s: string) => [...Buffer.from(s)];
    // What Lambda hands over of a record on the wire, its headers as the list they are there.
    const eventOf = (t: string, r: WireRecord) => ({
      eventSource: "aws:kafka",
      records: {
        [`${t}-${r.partition}`]: [
          {
            topic: t,
            partition: r.partition,
            offset: r.offset,
            timestamp: 1,
            key: b64(r.key ?? ""),
            value: b64(r.value ?? ""),
            headers: r.headers.map(([n, v]) => ({ [n]: bytes(v) })),
          },
        ],
      },
    });
    const user = [
      ["a", "1"],
      ["b", "2"],
      ["a", "3"],
    ];
    await getKafkaProducer().send(topic, [
      { key: "k", value: "{}", partition: 0, headers: user.map(([n, v]) => ({ name: n!, value: v! })) },
    ]);
    const [main] = await wireRecords(topic);
    expect(main!.headers).toEqual(user);
    expect(await process(eventOf(topic, main!), lambdaContext())).toEqual({ batchItemFailures: [] });
    const [retried] = await wireRecords(`${topic}.retry.150ms`);
    expect(retried!.headers.slice(0, 3)).toEqual(user);
    expect(retried!.headers.slice(3).map(([n]) => n)).toContain("x-retry-count");
    expect(await process(eventOf(`${topic}.retry.150ms`, retried!), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    const [dead] = await wireRecords(`${topic}.DLQ`);
    expect(dead!.headers.slice(0, 3)).toEqual(user);
    expect(dead!.headers.filter(([n]) => n === "x-retry-count")).toEqual([["x-retry-count", "2"]]);
    // The DLQ tooling reads it with kafkajs, which folds a repeated name into an array: both kept.
    const letters: KafkaDeadLetter[] = [];
    await readTopicToEnd(`${topic}.DLQ`, async (batch) => void letters.push(...batch));
    const h = letters[0]!.message.headers!;
    expect([h.a, h.b].map((v) => (Array.isArray(v) ? v.map(String) : String(v)))).toEqual([["1", "3"], "2"]);
  });

  it("bad input (bad header bytes, undecodable values, bad JSON) gets typed errors and reaches the dead-letter topic; binary headers and tombstones are not bad input", async () => {
    const topic = name("pay-bad");
    let called = 0;
    const { process } = processor(async () => {
      called++;
    });
    const base = { topic, partition: 0, timestamp: Date.now(), timestampType: "CREATE_TIME", key: b64("k") };
    const event = {
      eventSource: "aws:kafka",
      records: {
        [`${topic}-0`]: [
          { ...base, offset: 0, value: b64("{}"), headers: [{ "message-id": [0xff, 0xfe, 0xfd] }] },
          { ...base, offset: 1, value: null, headers: [] },
          { ...base, offset: 2, value: "***not base64***", headers: [] },
          { ...base, offset: 3, value: b64("{truncated"), headers: [] },
          { ...base, offset: 4, value: b64('{"ok":true}'), headers: [{ h: [999] }] },
          { ...base, offset: 5, value: b64('{"ok":true}'), headers: [] },
        ],
      },
    };
    await withTap(topic, async (tap) => {
      expect(await process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
      const dead = await tap.take(`${topic}.DLQ`, 3);
      const byOffset = Object.fromEntries(
        dead.map((d) => [header(d, "x-original-offset"), header(d, "x-last-error")?.split(":")[0]]),
      );
      expect(byOffset).toEqual({
        "2": MalformedRecordError.name,
        "3": "InvalidJsonError",
        "4": MalformedRecordError.name,
      });
      expect(tap.pending(`${topic}.DLQ`)).toBe(0);
    });
    // A binary message-id (an id as bytes, taken as hex) and a tombstone reach the handler.
    expect(called).toBe(3);
  });

  it("key order: once a key is on the retry path, its later records follow it there, in order", async () => {
    const topic = name("pay-follow");
    const seen: string[] = [];
    const { process, telemetry } = processor<{ step: string }>(async (env) => {
      if (env.body.step === "authorize" && env.attempt === 1) throw new TransientError("issuer timeout");
      seen.push(`${env.key}:${env.body.step}`);
    });
    await withTap(topic, async (tap) => {
      await getKafkaProducer().send(topic, [
        { key: "acct-1", value: '{"step":"authorize"}', partition: 0 },
        { key: "acct-2", value: '{"step":"authorize-other"}', partition: 0 },
        { key: "acct-1", value: '{"step":"capture"}', partition: 0 },
      ]);
      await process(toMskEvent(await tap.take(topic, 3)), lambdaContext());
      expect(seen).toEqual(["acct-2:authorize-other"]);
      const retried = await tap.take(`${topic}.retry.150ms`, 2);
      expect(retried.map((r) => r.message.value?.toString())).toEqual([
        '{"step":"authorize"}',
        '{"step":"capture"}',
      ]);
      await process(toMskEvent(retried), lambdaContext());
    });
    expect(seen).toEqual(["acct-2:authorize-other", "acct-1:authorize", "acct-1:capture"]);
    expect(telemetry.counts.KafkaFollowedKeyToRetry).toBe(1);
  });

  it("if producing to the retry topic fails, the record is reported failed: nothing is lost", async () => {
    const dead = createKafkaProducer(
      {
        brokers: ["127.0.0.1:1"],
        connectionTimeoutMs: 200,
        retry: { retries: 1, initialRetryTime: 50, maxRetryTime: 100 },
      },
      { logLevel: logLevel.NOTHING },
    );
    const { process, telemetry } = processor<{ n: number }>(
      async (env) => {
        if (env.body.n === 2) throw new TransientError("boom");
      },
      { producer: dead },
    );
    const t = "pay-unparked";
    const rec = (partition: number, offset: number, n: number) => ({
      topic: t,
      partition,
      offset,
      timestamp: 1,
      key: b64(`k${n}`),
      value: b64(JSON.stringify({ n })),
      headers: [],
    });
    const response = await process(
      {
        eventSource: "aws:kafka",
        records: { [`${t}-0`]: [rec(0, 10, 1), rec(0, 11, 2), rec(0, 12, 3)], [`${t}-1`]: [rec(1, 5, 4)] },
      },
      lambdaContext(),
    );
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: `${t}-0`, offset: 11 } }],
    });
    expect(telemetry.counts.ParkingFailed).toBe(1);
    await dead.disconnect();
  });
});

describe("Kafka consumer: partial batch responses, ordering and time", () => {
  const t = "orders";
  const rec = (
    partition: number,
    offset: number,
    key: string,
    body: unknown,
    extra: Record<string, unknown> = {},
  ) => ({
    topic: t,
    partition,
    offset,
    timestamp: Date.now(),
    key: b64(key),
    value: b64(JSON.stringify(body)),
    headers: [],
    ...extra,
  });

  it("reports, per partition, exactly the first failed record; permanent errors still go to the DLQ", async () => {
    const { process } = processor<{ fail?: "transient" | "permanent" }>(
      async (env) => {
        if (env.body.fail === "transient") throw new TransientError("later");
        if (env.body.fail === "permanent") throw new PermanentError("never");
      },
      { failureMode: "partial-batch", idempotency: false, producer: getKafkaProducer() },
    );
    const topic = name("partial");
    await declareLadder(ladder, topic);
    const r = (p: number, o: number, body: unknown) => ({ ...rec(p, o, `k${o}`, body), topic });
    const response = await process(
      {
        eventSource: "aws:kafka",
        records: {
          [`${topic}-0`]: [
            r(0, 100, {}),
            r(0, 101, { fail: "permanent" }),
            r(0, 102, { fail: "transient" }),
            r(0, 103, {}),
          ],
          [`${topic}-1`]: [r(1, 7, {}), r(1, 8, {})],
          [`${topic}-2`]: [r(2, 0, { fail: "transient" })],
        },
      },
      lambdaContext(),
    );
    expect(response).toEqual({
      batchItemFailures: [
        { itemIdentifier: { partition: `${topic}-0`, offset: 102 } },
        { itemIdentifier: { partition: `${topic}-2`, offset: 0 } },
      ],
    });
  });

  it("key-parallel mode keeps each key's order and really runs different keys at once", async () => {
    const intervals: { key: string; offset: number; start: number; end: number }[] = [];
    const io = () => new Promise((r) => setTimeout(r, 15));
    const handler: KafkaRecordHandler<unknown> = async (env) => {
      const start = performance.now();
      await io();
      intervals.push({
        key: env.key!,
        offset: Number(env.source.kind === "kafka" ? env.source.offset : -1),
        start,
        end: performance.now(),
      });
    };
    const records = Array.from({ length: 12 }, (_, i) => rec(0, i, `key-${i % 3}`, { i }));
    const event = { eventSource: "aws:kafka", records: { [`${t}-0`]: records } };

    const keyed = processor(handler, { ordering: "key", idempotency: false });
    expect(await keyed.process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    for (const key of ["key-0", "key-1", "key-2"]) {
      const mine = intervals.filter((x) => x.key === key);
      expect(mine.map((x) => x.offset)).toEqual([...mine.map((x) => x.offset)].sort((a, b) => a - b));
      for (let i = 1; i < mine.length; i++) expect(mine[i]!.start).toBeGreaterThanOrEqual(mine[i - 1]!.end);
    }
    const overlaps = (a: (typeof intervals)[0], b: (typeof intervals)[0]) =>
      a.start < b.end && b.start < a.end;
    const crossKeyOverlap = intervals.some((a) => intervals.some((b) => a.key !== b.key && overlaps(a, b)));
    expect(crossKeyOverlap).toBe(true);

    // The default, partition order, never overlaps two records of one partition.
    intervals.length = 0;
    const sequential = processor(handler, { idempotency: false });
    await sequential.process(event, lambdaContext());
    expect(intervals.map((x) => x.offset)).toEqual(records.map((r) => r.offset));
    expect(intervals.some((a) => intervals.some((b) => a !== b && overlaps(a, b)))).toBe(false);
  });

  it("in key mode a failure holds back only its key, and the partition resumes at the lowest unfinished offset", async () => {
    const handled: number[] = [];
    const { process } = processor<{ i: number }>(
      async (env) => {
        if (env.body.i === 1) throw new TransientError("x");
        handled.push(env.body.i);
      },
      { ordering: "key", failureMode: "partial-batch", idempotency: false },
    );
    const records = [0, 1, 2, 3, 4].map((i) => rec(0, 50 + i, i % 2 === 0 ? "even" : "odd", { i }));
    const response = await process(
      { eventSource: "aws:kafka", records: { [`${t}-0`]: records } },
      lambdaContext(),
    );
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: `${t}-0`, offset: 51 } }],
    });
    expect(handled.sort()).toEqual([0, 2, 4]); // odd key stopped at 1, so 3 never ran
  });

  it("a retry record not due within the remaining time waits what it can, then is left for redelivery, untouched", async () => {
    let called = 0;
    const slept: number[] = [];
    const { process, telemetry } = processor(
      async () => {
        called++;
      },
      {
        retry: createRetryLadder({ delays: ["1h"] }),
        idempotency: false,
        sleep: async (ms) => {
          slept.push(ms);
        },
      },
    );
    const topic = "orders.retry.1h";
    const event = {
      eventSource: "aws:kafka",
      records: { [`${topic}-3`]: [rec(3, 9, "k", {}, { topic, timestamp: Date.now() })] },
    };
    expect(await process(event, lambdaContext(30_000))).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: `${topic}-3`, offset: 9 } }],
    });
    expect(called).toBe(0);
    expect(telemetry.counts.KafkaRetryNotYetDue).toBe(1);
    // Issue 26 item 4: every hand-back uses one of the mapping's finite retry attempts, so the
    // consumer first waits all it may (the remaining time less the 5 s margin): a record on a rung
    // of d is then handed back at most ⌈d ÷ (timeout − 5 s)⌉ times (`kafkaWaitHandBacks`).
    expect(slept).toEqual([25_000]);
  });

  it("does not start records when the Lambda is out of time, and reports them", async () => {
    const { process } = processor(async () => {}, { idempotency: false, timeMarginMs: 5_000 });
    const event = {
      eventSource: "aws:kafka",
      records: { [`${t}-0`]: [rec(0, 1, "a", {}), rec(0, 2, "a", {})] },
    };
    expect(await process(event, lambdaContext(1_000))).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: `${t}-0`, offset: 1 } }],
    });
  });

  it("without ReportBatchItemFailures, an incomplete batch throws instead of acking", async () => {
    const { process } = processor(
      async () => {
        throw new TransientError("x");
      },
      { failureMode: "partial-batch", idempotency: false, reportBatchItemFailures: false },
    );
    const event = { eventSource: "aws:kafka", records: { [`${t}-0`]: [rec(0, 1, "a", {})] } };
    await expect(process(event, lambdaContext())).rejects.toBeInstanceOf(KafkaBatchIncompleteError);
  });

  it("deduplicates inside a batch in memory, with a shared dedup store", async () => {
    let calls = 0;
    const store = createDedupStore({ tableName: table, scope: name("in-batch"), client: ddb });
    const { process, telemetry } = processor(
      async () => {
        calls++;
      },
      { idempotency: store },
    );
    const h = [{ "message-id": [...Buffer.from("same")] }];
    const event = {
      eventSource: "aws:kafka",
      records: { [`${t}-0`]: [rec(0, 1, "a", {}, { headers: h }), rec(0, 2, "b", {}, { headers: h })] },
    };
    expect(await process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(calls).toBe(1);
    expect(telemetry.counts.InBatchDuplicates).toBe(1);
  });

  it("keeps renewing the dedup lease of a long record, so nobody else can claim it meanwhile", async () => {
    const scope = name("long");
    const other = createDedupStore({ tableName: table, scope, client: ddb });
    let probe: string | undefined;
    const { process } = processor(
      async (env) => {
        // Wait past the lease length, then try to take the key as a second consumer instance would.
        await new Promise((r) => setTimeout(r, 4_500));
        probe = (await other.claim(env.id)).status;
      },
      { idempotency: { tableName: table, scope, leaseMs: 3_000 } },
    );
    const event = { eventSource: "aws:kafka", records: { [`${t}-0`]: [rec(0, 1, "a", {})] } };
    expect(await process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(probe).toBe("in-progress");
    expect((await other.claim("orders:0:1")).status).toBe("duplicate");
  });

  it("a record redelivered after its invocation crashed waits out the lease it left, goes back to Lambda, and runs once the lease is over", async () => {
    // Issue 26 item 4: the lease a crashed invocation left (out of memory, killed at its timeout)
    // read as "in progress elsewhere", so the redelivered record was routed to the retry topic,
    // where it crashed the function again a lease later, for ever. Issue 34 item 10: taking that
    // lease over at once ran the effect twice when its holder was alive (one offset in two
    // invocations at once). Now the record waits what the invocation may for the lease to end and
    // goes back to Lambda, which retries, counts and finally dead-letters a record that keeps
    // crashing; a key held under another record's coordinates still goes round the ladder.
    const scope = name("crashed");
    const topic = name("crashed-topic");
    await declareLadder(ladder, topic);
    let clock = Date.now();
    const crashed = createDedupStore({ tableName: table, scope, client: ddb });
    // What the dead invocation left: a live lease under the record's coordinates (and another
    // record's key, held by a live invocation of some other record, which stays held).
    const dead = await crashed.claim("m-1", { delivery: `${topic}:0:5` });
    if (dead.status !== "claimed") throw new Error(`expected a claim, got ${dead.status}`);
    expect((await crashed.claim("m-2", { delivery: `${topic}.retry.150ms:0:9` })).status).toBe("claimed");
    const ran: string[] = [];
    const waits: number[] = [];
    const { process, telemetry } = processor<{ i: number }>(
      async (env) => {
        ran.push(env.id);
      },
      {
        idempotency: { tableName: table, scope, now: () => clock },
        now: () => clock,
        // The test's clock: a wait moves it on, as the wait would.
        sleep: async (ms) => {
          waits.push(ms);
          clock += ms;
        },
      },
    );
    const h = (id: string) => [{ "message-id": [...Buffer.from(id)] }];
    const event = {
      eventSource: "aws:kafka",
      records: {
        [`${topic}-0`]: [
          { ...rec(0, 5, "a", { i: 1 }, { headers: h("m-1") }), topic },
          { ...rec(0, 6, "b", { i: 2 }, { headers: h("m-2") }), topic },
        ],
      },
    };
    await withTap(topic, async (tap) => {
      // Handed back (and its partition behind it) after waiting until the dead lease ends.
      expect(await process(event, lambdaContext())).toEqual({
        batchItemFailures: [{ itemIdentifier: { partition: `${topic}-0`, offset: 5 } }],
      });
      expect(ran).toEqual([]);
      expect(waits).toHaveLength(1);
      expect(clock).toBe(dead.lease.expiresAtMs);
      // Lambda's retry, once the lease is over: the record runs.
      clock += 1;
      expect(await process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
      expect(ran).toEqual(["m-1"]);
      // The key a live invocation holds went round the ladder without using an attempt, as before.
      const [held] = await tap.take(ladderTopics(ladder, topic).retry[0]!, 1);
      expect(header(held!, "x-last-error")).toMatch(/^InProgressElsewhereError/);
    });
    expect(telemetry.counts.InProgressElsewhere).toBe(2);
    const later = createDedupStore({ tableName: table, scope, client: ddb, now: () => clock });
    expect((await later.claim("m-1")).status).toBe("duplicate");
  });

  it("one offset in two invocations at once: the effect runs once, and the second hands the record back (issue 34 item 10)", async () => {
    // AWS promises at-least-once delivery and nothing about concurrency: a poller rebalance can give
    // one offset to two invocations at once. The claim was made under the record's coordinates and
    // a claim under the same coordinates took a live lease over (two containers: the effect ran
    // twice), or, in one container, answered "in progress" and routed the record to the retry
    // topic, acking the offset while the first invocation could still fail.
    const topic = name("twice");
    await declareLadder(ladder, topic);
    for (const containers of [1, 2]) {
      const scope = name(`twice-${containers}`);
      const effects: number[] = [];
      let entered!: () => void;
      const inEffect = new Promise<void>((r) => {
        entered = r;
      });
      let finish!: () => void;
      const finished = new Promise<void>((r) => {
        finish = r;
      });
      // The first effect runs until the second invocation has answered; any other returns at once.
      const handler = async (env: { body: { i: number } }) => {
        effects.push(env.body.i);
        if (effects.length > 1) return;
        entered();
        await finished;
      };
      const sleeps: number[] = [];
      const options = {
        idempotency: { tableName: table, scope },
        sleep: async (ms: number) => void sleeps.push(ms),
      };
      const first = processor<{ i: number }>(handler, options);
      const second = containers === 1 ? first : processor<{ i: number }>(handler, options);
      const offset = 10 + containers;
      const event = {
        eventSource: "aws:kafka",
        records: { [`${topic}-0`]: [{ ...rec(0, offset, "k", { i: offset }), topic }] },
      };
      const running = first.process(event, lambdaContext());
      await inEffect;
      const answer = await second.process(event, lambdaContext());
      finish();
      expect(await running).toEqual({ batchItemFailures: [] });
      expect(effects).toEqual([offset]);
      expect(answer).toEqual({
        batchItemFailures: [{ itemIdentifier: { partition: `${topic}-0`, offset } }],
      });
      // It waited for the first's lease before handing back; nothing went to the retry topic.
      expect(sleeps).toHaveLength(1);
      expect(second.telemetry.counts.RoutedToRetry).toBeUndefined();
      // Lambda's retry of the second: a duplicate now.
      expect(await second.process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
      expect(effects).toEqual([offset]);
    }
    expect(await recordsIn(`${topic}.retry.150ms`)).toBe(0);
  });

  it("claims ahead, but never acts on a claim that went stale and was taken meanwhile", async () => {
    const scope = name("ahead");
    const thief = createDedupStore({ tableName: table, scope, client: ddb });
    const ran: number[] = [];
    const { process } = processor<{ i: number }>(
      async (env) => {
        ran.push(env.body.i);
        if (env.body.i === 1) {
          // Outlive the second record's claim (taken ahead, 1 s), then let another instance take its key.
          await new Promise((r) => setTimeout(r, 1_600));
          expect((await thief.claim("m-2")).status).toBe("claimed");
        }
      },
      { failureMode: "partial-batch", idempotency: { tableName: table, scope, leaseMs: 1_000 } },
    );
    const h = (id: string) => [{ "message-id": [...Buffer.from(id)] }];
    const event = {
      eventSource: "aws:kafka",
      records: {
        [`${t}-0`]: [
          rec(0, 1, "a", { i: 1 }, { headers: h("m-1") }),
          rec(0, 2, "a", { i: 2 }, { headers: h("m-2") }),
        ],
      },
    };
    expect(await process(event, lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: `${t}-0`, offset: 2 } }],
    });
    expect(ran).toEqual([1]);
  });

  it("same id, other payload in one batch: the second is not acked unseen, it waits for a redelivery", async () => {
    const ran: number[] = [];
    const { process } = processor<{ i: number }>(
      async (env) => {
        ran.push(env.body.i);
      },
      { failureMode: "partial-batch" },
    );
    const h = [{ "message-id": [...Buffer.from("same-id")] }];
    const event = {
      eventSource: "aws:kafka",
      records: {
        [`${t}-0`]: [rec(0, 1, "a", { i: 1 }, { headers: h }), rec(0, 2, "a", { i: 2 }, { headers: h })],
      },
    };
    expect(await process(event, lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: `${t}-0`, offset: 2 } }],
    });
    expect(ran).toEqual([1]);
  });

  it("acks an applied record whose completion failed transiently, so the effect is not run again", async () => {
    // Every dedup completion (a fenced PartiQL UPDATE) is throttled past the SDK's retries.
    const faulty = new DynamoDBClient({ maxAttempts: 1 });
    faulty.middlewareStack.add(
      (next, context) => async (args) => {
        const statements = JSON.stringify(args.input);
        if (context.commandName?.includes("Statement") && statements.includes("UPDATE"))
          throw Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException", $fault: "client" });
        return next(args);
      },
      { step: "initialize", name: "throttleCompletions" },
    );
    const ran: number[] = [];
    const { process, telemetry } = processor<{ i: number }>(
      async (env) => {
        ran.push(env.body.i);
      },
      { failureMode: "partial-batch", dynamodbClient: faulty },
    );
    const event = {
      eventSource: "aws:kafka",
      records: { [`${t}-0`]: [rec(0, 7, "a", { i: 7 }), rec(0, 8, "b", { i: 8 })] },
    };
    expect(await process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual([7, 8]);
    expect(telemetry.counts.TransientFailures).toBe(2);
    faulty.destroy();
  });

  it("the Middy handler rejects an event of an unknown shape", async () => {
    const handler = kafkaConsumer(async () => {}, { telemetry: recordingTelemetry(), idempotency: false });
    await expect(handler({ Records: [{ body: "sqs?" }] }, lambdaContext())).rejects.toThrow(
      /not a Kafka event/,
    );
    expect(await handler({ eventSource: "aws:kafka", records: {} }, lambdaContext())).toEqual({
      batchItemFailures: [],
    });
  });
});

describe("Kafka consumer: a routed record is recognised on redelivery (issue 26 item 3)", () => {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const recordOf = (topic: string, offset: number, key: string, value: string, id?: string) => ({
    topic,
    partition: 0,
    offset,
    timestamp: Date.now(),
    key: b64(key),
    value: b64(value),
    headers: id ? [{ "message-id": [...Buffer.from(id)] }] : [],
  });

  it("partial-batch: a record dead-lettered above the lowest unfinished offset is neither run nor routed again when Lambda resumes there", async () => {
    const topic = name("routed-partial");
    await declareLadder(ladder, topic);
    const runs: string[] = [];
    let transientLeft = 1;
    const { process, telemetry } = processor<{ fail?: string }>(
      async (env) => {
        runs.push(env.id);
        if (env.body.fail === "transient" && transientLeft-- > 0) throw new TransientError("later");
        if (env.body.fail === "permanent") throw new PermanentError("never");
      },
      { ordering: "key", failureMode: "partial-batch" },
    );
    const event = {
      eventSource: "aws:kafka",
      records: {
        [`${topic}-0`]: [
          recordOf(topic, 10, "a", '{"fail":"transient"}', "m-10"),
          recordOf(topic, 11, "b", '{"fail":"permanent"}', "m-11"),
          recordOf(topic, 12, "c", "{not json", "m-12"),
          recordOf(topic, 13, "d", "{}", "m-13"),
        ],
      },
    };
    expect(await process(event, lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: `${topic}-0`, offset: 10 } }],
    });
    expect(await recordsIn(`${topic}.DLQ`)).toBe(2);
    // Lambda resumes the partition at offset 10: every later record comes again.
    expect(await process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await recordsIn(`${topic}.DLQ`)).toBe(2);
    expect(runs.sort()).toEqual(["m-10", "m-10", "m-11", "m-13"]);
    expect(telemetry.counts.DeadLettered).toBe(2);
    expect(telemetry.counts.RoutedRecognised).toBe(2);
  });

  it("retry-topics: a batch redelivered whole after its routes were produced (the invocation died before answering) routes nothing twice", async () => {
    const topic = name("routed-again");
    await declareLadder(ladder, topic);
    const runs: string[] = [];
    const { process, telemetry } = processor<{ fail?: string }>(async (env) => {
      runs.push(env.id);
      if (env.body.fail === "transient") throw new TransientError("issuer timeout");
    });
    const event = {
      eventSource: "aws:kafka",
      records: {
        [`${topic}-0`]: [
          recordOf(topic, 0, "acct-1", '{"fail":"transient"}', "m-0"),
          recordOf(topic, 1, "acct-1", "{}", "m-1"), // follows its key onto the retry path
          recordOf(topic, 2, "acct-2", "{not json"), // undecodable: dead-lettered by its coordinates
          recordOf(topic, 3, "acct-3", "{}", "m-3"),
        ],
      },
    };
    for (let delivery = 0; delivery < 2; delivery++)
      expect(await process(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await recordsIn(`${topic}.retry.150ms`)).toBe(2);
    expect(await recordsIn(`${topic}.DLQ`)).toBe(1);
    expect(runs).toEqual(["m-0", "m-3"]);
    expect(telemetry.counts.RoutedToRetry).toBe(2);
    expect(telemetry.counts.DeadLettered).toBe(1);
  });

  it("idempotency: false gives no such memory: a redelivered routed record runs and is routed again", async () => {
    const topic = name("routed-no-store");
    await declareLadder(ladder, topic);
    const { process } = processor<{ fail?: string }>(
      async (env) => {
        if (env.body.fail === "permanent") throw new PermanentError("never");
      },
      { failureMode: "partial-batch", idempotency: false },
    );
    const event = {
      eventSource: "aws:kafka",
      records: { [`${topic}-0`]: [recordOf(topic, 0, "a", '{"fail":"permanent"}', "m-0")] },
    };
    await process(event, lambdaContext());
    await process(event, lambdaContext());
    expect(await recordsIn(`${topic}.DLQ`)).toBe(2);
  });
});
