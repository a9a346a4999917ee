import { type AttributeValue, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { type Message, type MessageAttributeValue, SendMessageCommand } from "@aws-sdk/client-sqs";
import { resolveNewEvent, toOutboxItem } from "../lib/outbox/outboxEvent.ts";
import { kafkaCases, sqsCases, wrongShapes } from "./badInputCorpus.ts";
import { startChaosService } from "./chaosService.ts";
import { CHAOS_ID, outboxOrderOnTopic } from "./invariants.ts";
import type { ScenarioContext, ScenarioResult } from "./scenarios.ts";
import { readQueue, readTopic } from "./storedState.ts";

/**
 * Scenario 6: the bad-input corpus (badInputCorpus.ts) through the running service, on the real
 * transports: SQS cases sent to the orders queue, Kafka cases produced to the topic (those a
 * producer can write: a value that is not base64 or a header byte above 255 only exist in a
 * corrupted event, and are covered by test/chaos/badInputs.test.ts), malformed outbox items
 * written to the app table for the relay's stream, and every wrong event shape invoked on every
 * function. Each bad input must land in its dead-letter destination with its typed error (or be
 * refused as a whole, for wrong shapes); each good one must be processed.
 */
export async function badInputsThroughService(ctx: ScenarioContext): Promise<ScenarioResult> {
  const started = Date.now();
  const id = `chaos-bad-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;
  const service = await startChaosService({ assembly: ctx.assembly, prefix: id, direct: ctx.endpoints });
  const outcomes: Array<{ consumer: string; name: string; expected: string; got: string }> = [];
  try {
    const n = service.names;

    // SQS, one SendMessage each: a message SQS itself refuses is the producer's error, not ours.
    const sqsSent = new Map<number, string>();
    for (const [i, c] of sqsCases.entries()) {
      const attributes: Record<string, MessageAttributeValue> = {
        ...c.attributes,
        [CHAOS_ID]: { DataType: "String", StringValue: `${id}-s${i}` },
      };
      try {
        await service.sqs.send(
          new SendMessageCommand({
            QueueUrl: n.ordersUrl,
            MessageBody: c.body.replaceAll("<id>", `${id}-s${i}`),
            MessageAttributes: attributes,
          }),
        );
        sqsSent.set(i, `${id}-s${i}`);
      } catch (error) {
        outcomes.push({
          consumer: "sqs",
          name: c.name,
          expected: expectedOf(c.expect),
          got: `refused by SQS at send (${(error as Error).name})`,
        });
      }
    }

    // Kafka: keys identify the records on the dead-letter topic (routing keeps key bytes).
    const producible = kafkaCases
      .map((c, i) => ({ c, i }))
      .filter(({ c }) => producerCanWrite(c.value, c.headers));
    const producer = service.kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic: n.topic,
        acks: -1,
        messages: producible.map(({ c, i }) => ({
          key: `${id}-k${i}`,
          value:
            c.value === null
              ? null
              : Buffer.from(
                  Buffer.from(c.value, "base64").toString("latin1").replaceAll("<id>", `${id}-k${i}`),
                  "latin1",
                ),
          headers: Object.fromEntries(
            (c.headers ?? []).flatMap((h) => Object.entries(h).map(([k, v]) => [k, Buffer.from(v)])),
          ),
        })),
      });
    } finally {
      await producer.disconnect();
    }

    // Stream: outbox items the relay must refuse. They pass its filter (OUTBOX# key, pending set)
    // and are built from a well-formed item, each with one defect (and a key of its own).
    const shape = { now: Date.now(), retentionSeconds: 3600, pendingShards: 8 };
    const wellFormed = toOutboxItem(
      resolveNewEvent(
        {
          aggregateType: "audit",
          aggregateId: id,
          eventType: "Audited",
          payload: { ok: true },
          destination: `sqs:${n.parkingUrl}`,
        },
        { ...shape, defaultDestination: undefined, incomingTraceparent: undefined, causationId: id },
      ),
      shape,
    );
    const { payload: _payload, ...withoutPayload } = wellFormed;
    const badItems: Record<string, Record<string, AttributeValue>> = {
      "no payload": withoutPayload,
      "unknown destination scheme": { ...wellFormed, destination: { S: "carrier-pigeon:coop" } },
      "wrongly typed attributes": { ...wellFormed, createdAt: { S: "yesterday" }, eventId: { N: "7" } },
    };
    for (const [name, item] of Object.entries(badItems)) {
      await service.dynamodb.send(
        new PutItemCommand({
          TableName: n.appTable,
          Item: { ...item, sk: { S: `EVENT#${name.replaceAll(" ", "-")}` } },
        }),
      );
    }

    // Wrong event shapes, on every function: refused as a whole, with a typed error.
    for (const fn of [service.functions.orders, service.functions.payments, service.functions.relay]) {
      for (const shape of wrongShapes) {
        if (fn === service.functions.payments && shape.name === "an MSK event") continue;
        const r = await service.runtime.host.invoke(fn, shape.event);
        outcomes.push({
          consumer: fn,
          name: `wrong shape: ${shape.name}`,
          expected: "UnknownEventShapeError",
          got: r.ok ? "accepted" : r.errorType,
        });
      }
    }

    // Wait until every bad input is parked and every good one is processed (bounded).
    const sqsGood = [...sqsSent].filter(([i]) => "processed" in sqsCases[i]!.expect);
    const kafkaGood = producible.filter(({ c }) => "processed" in c.expect);
    const expectedParked =
      sqsSent.size - sqsGood.length + producible.length - kafkaGood.length + Object.keys(badItems).length;
    const sqsParked = new Map<string, string>();
    const streamParked = new Map<string, string>();
    const deadline = Date.now() + (ctx.settleTimeoutMs ?? 120_000);
    let state = await observe();
    while (Date.now() < deadline && !state.done) {
      await new Promise((r) => setTimeout(r, 2_000));
      state = await observe();
    }

    for (const [i, chaosId] of sqsSent) {
      const c = sqsCases[i]!;
      const parked = state.sqsParked.get(chaosId);
      outcomes.push({
        consumer: "sqs",
        name: c.name,
        expected: expectedOf(c.expect),
        got: parked ?? (state.orders.has(chaosId) ? "processed" : "lost"),
      });
    }
    for (const { c, i } of producible) {
      const key = `${id}-k${i}`;
      outcomes.push({
        consumer: "kafka",
        name: c.name,
        expected: expectedOf(c.expect),
        got: state.kafkaParked.get(key) ?? (state.charged.has(key) ? "processed" : "lost"),
      });
    }
    for (const name of Object.keys(badItems)) {
      outcomes.push({
        consumer: "stream",
        name,
        expected: "MalformedOutboxItemError",
        got: state.streamParked.get(`EVENT#${name.replaceAll(" ", "-")}`) ?? "lost",
      });
    }
    const order = await outboxOrderOnTopic(service);
    const wrong = outcomes.filter((o) => o.got !== o.expected);
    const lost = outcomes.filter((o) => o.got === "lost").length;
    const bad = outcomes.filter((o) => o.expected !== "processed").length;
    return {
      name: "badInputs",
      figures: {
        messages: outcomes.length,
        faultsInjected: bad,
        lost,
        duplicateEffects: order.duplicateEffects,
        dlq: state.parkedCount,
        poisonParkedCorrectly: wrong.length === 0,
        aggregatesOutOfOrder: order.outOfOrder.length,
        expectedParked,
        wrongOutcomes: wrong.length,
      },
      details: {
        wrongOutcomes: wrong.map((o) => `${o.consumer} ${o.name}: ${o.got} (want ${o.expected})`),
        outOfOrder: order.outOfOrder,
      },
      durationMs: Date.now() - started,
    };

    async function observe() {
      // Parked messages stay parked (nothing consumes the DLQs), so each read hides what it got
      // for the rest of the scenario and adds it to what earlier reads found.
      const [dlq, parking, dead] = await Promise.all([
        readQueue(service.sqs, n.ordersDlqUrl),
        readQueue(service.sqs, n.parkingUrl),
        readTopic(service.kafka, n.deadLetterTopic),
      ]);
      for (const m of dlq) {
        const { context, chaosId } = unpack(m);
        if (chaosId) sqsParked.set(chaosId, errorType(context?.["x-last-error"]));
      }
      const kafkaParked = new Map<string, string>();
      for (const r of dead) if (r.key) kafkaParked.set(r.key, errorType(r.headers["x-last-error"]));
      for (const m of parking) {
        const item = (JSON.parse(m.Body ?? "{}") as { item?: { sk?: { S?: string } } }).item;
        const context = unpack(m).context;
        if (item?.sk?.S) streamParked.set(item.sk.S, errorType(context?.["x-last-error"]));
      }
      const orders = new Set<string>();
      for (const [, chaosId] of sqsGood) {
        const got = await service.dynamodb.send(
          new GetItemCommand({
            TableName: n.appTable,
            Key: { pk: { S: `ORDER#${chaosId}` }, sk: { S: "ORDER" } },
          }),
        );
        if (got.Item) orders.add(chaosId);
      }
      const charged = new Set<string>();
      const ledger = service.provider.readLedger();
      for (const { i } of kafkaGood) {
        if (ledger.some((l) => l.outcome === "charged" && l.orderId === `${id}-k${i}`))
          charged.add(`${id}-k${i}`);
      }
      const parkedCount = sqsParked.size + kafkaParked.size + streamParked.size;
      const done =
        parkedCount >= expectedParked && orders.size === sqsGood.length && charged.size === kafkaGood.length;
      return { sqsParked, kafkaParked, streamParked, orders, charged, parkedCount, done };
    }
  } finally {
    await service.stop();
  }
}

const expectedOf = (e: { dlq: string } | { processed: true }) => ("dlq" in e ? e.dlq : "processed");
const errorType = (lastError: string | undefined) => lastError?.split(":")[0] ?? "parked without context";

/** A record a Kafka producer can write: base64 that round-trips, header bytes that are bytes. */
function producerCanWrite(value: string | null, headers?: ReadonlyArray<Record<string, number[]>>): boolean {
  if (value !== null && Buffer.from(value, "base64").toString("base64") !== value) return false;
  return (headers ?? []).every((h) =>
    Object.values(h).every((bytes) => bytes.every((b) => b >= 0 && b <= 255)),
  );
}

/** The failure context and the chaos id of a parked SQS message, packed side by side or folded. */
function unpack(m: Message): { context: Record<string, string> | undefined; chaosId: string | undefined } {
  const folded = m.MessageAttributes?.["x-folded-attributes"]?.StringValue;
  if (folded) {
    const f = JSON.parse(folded) as {
      attributes?: Record<string, { StringValue?: string }>;
      context?: Record<string, string>;
    };
    return { context: f.context, chaosId: f.attributes?.[CHAOS_ID]?.StringValue };
  }
  const raw = m.MessageAttributes?.["x-failure-context"]?.StringValue;
  return {
    context: raw ? (JSON.parse(raw) as Record<string, string>) : undefined,
    chaosId: m.MessageAttributes?.[CHAOS_ID]?.StringValue,
  };
}
