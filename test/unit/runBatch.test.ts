import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type Envelope, PermanentError, TransientError } from "reliable-consumers";
import type { KafkaProducer } from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";
import type { RecordPlan } from "../../lib/batch/batchPlan.ts";
import { done, type RecordOutcome } from "../../lib/batch/recordOutcome.ts";
import { type BatchAdapter, createBatchConsumer, runBatch } from "../../lib/batch/runBatch.ts";
import { kafkaRouting } from "../../lib/kafka/kafkaRouting.ts";
import type { KafkaRecordView } from "../../lib/kafka/mskEvent.ts";
import { createRetryLadder } from "../../lib/kafka/retryLadder.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { recordingTelemetry } from "../support/telemetry.ts";

// The runner with no dedup store (idempotency: false) and a plain adapter: its stage order, its
// finally and its policies, with no AWS at all.
type Rec = { id: string; lane: string; body: string };
type Plan = RecordPlan<Rec, string>;

const envelopeOf = (r: Rec): Envelope<string> => ({
  id: r.id,
  idSource: "business",
  key: r.lane,
  body: r.body,
  raw: r.body,
  headers: {},
  attempt: 1,
  source: { kind: "sqs", queueArn: "arn:aws:sqs:us-east-1:000000000000:q", messageId: r.id },
});

function harness(
  handler: (envelope: Envelope<string>) => unknown,
  adapter: Partial<BatchAdapter<Rec, string, Envelope<string>, string[]>>,
) {
  const telemetry = recordingTelemetry();
  const steps: string[] = [];
  const consumer = createBatchConsumer<Rec, string, Envelope<string>>(
    async (envelope) => {
      steps.push(`run ${envelope.id}`);
      return handler(envelope);
    },
    { idempotency: false, dynamodbClient: new DynamoDBClient({}), telemetry, consumer: "unit" },
    { concurrency: 4, timeMarginMs: 0, settleReserveMs: 0 },
  );
  const full: BatchAdapter<Rec, string, Envelope<string>, string[]> = {
    decode: async (r) => {
      steps.push(`decode ${r.id}`);
      if (r.body === "bad") throw new PermanentError("bad input");
      return envelopeOf(r);
    },
    laneOf: (p) => p.record.lane,
    fail: (p, error) => {
      steps.push(`fail ${p.record.id} ${(error as Error).name}`);
      return { kind: "unfinished", error, delaySeconds: 0 } satisfies RecordOutcome;
    },
    reject: (p) => {
      steps.push(`reject ${p.record.id}`);
      return done("parked");
    },
    describe: (r) => ({ id: r.id }),
    answer: (plans) => {
      steps.push("answer");
      return plans.filter((p) => p.outcome?.kind !== "done").map((p) => p.record.id);
    },
    ...adapter,
  };
  const run = (records: Rec[]) =>
    runBatch(records, full, consumer.settings, consumer.open(lambdaContext("unit", 60_000), undefined));
  return { run, steps, telemetry };
}

describe("runBatch", () => {
  it("decodes each record once, settles bad input up front, runs lanes in order, and answers last", async () => {
    const { run, steps } = harness(() => undefined, {
      rejectUpFront: true,
      afterRun: async () => {
        steps.push("after run");
      },
      watch: {
        start: (plans) => steps.push(`watch ${plans.map((p) => p.record.id).join(",")}`),
        finished: (p: Plan) => steps.push(`finished ${p.record.id}`),
        stop: async () => {
          steps.push("watch stopped");
        },
      },
    });
    const unfinished = await run([
      { id: "a1", lane: "a", body: "x" },
      { id: "b1", lane: "b", body: "bad" },
      { id: "a2", lane: "a", body: "y" },
    ]);
    expect(unfinished).toEqual([]);
    expect(steps.filter((s) => s.startsWith("decode"))).toEqual(["decode a1", "decode b1", "decode a2"]);
    // Bad input first, then the watch over what will run, then the run, then after-run, stop, answer.
    expect(steps.slice(3)).toEqual([
      "reject b1",
      "watch a1,a2",
      "run a1",
      "finished a1",
      "run a2",
      "finished a2",
      "after run",
      "watch stopped",
      "answer",
    ]);
  });

  it("stops a lane at its first unfinished record; the rest of the lane is held back, other lanes go on", async () => {
    const { run, steps } = harness((e) => {
      if (e.id === "a1") throw new TransientError("down");
    }, {});
    expect(
      await run([
        { id: "a1", lane: "a", body: "x" },
        { id: "a2", lane: "a", body: "y" },
        { id: "b1", lane: "b", body: "z" },
      ]),
    ).toEqual(["a1", "a2"]);
    expect(steps).toContain("fail a1 TransientError");
    expect(steps).not.toContain("run a2");
    expect(steps).toContain("run b1");
  });

  it("a throw outside the records still stops the watch and answers; nothing unfinished is acked", async () => {
    const { run, steps } = harness(() => undefined, {
      afterRun: async () => {
        throw new Error("a bug after the run");
      },
      watch: {
        start: () => undefined,
        finished: () => undefined,
        stop: async () => void steps.push("watch stopped"),
      },
    });
    expect(await run([{ id: "c1", lane: "c", body: "x" }])).toEqual([]);
    expect(steps.slice(-2)).toEqual(["watch stopped", "answer"]);
  });
});

const unusedProducer: KafkaProducer = {
  send: async () => {
    throw new Error("not called");
  },
  sendBatch: async () => {
    throw new Error("not called");
  },
  disconnect: async () => undefined,
};

describe("the Kafka adapter's answer", () => {
  it("does not ack a routed record whose produce never ran", async () => {
    const telemetry = recordingTelemetry();
    const routing = kafkaRouting({
      ladder: createRetryLadder(),
      producer: unusedProducer,
      telemetry,
      consumer: "unit",
      failureMode: "retry-topics",
      keyOrder: true,
      now: Date.now,
      sleep: async () => undefined,
      timeMarginMs: 0,
      maxDueWaitMs: undefined,
      remainingMs: () => 60_000,
      lambdaSchemaRegistry: false,
    });
    const view: KafkaRecordView = {
      partitionKey: "orders-0",
      topic: "orders",
      partition: 0,
      offset: 7,
      timestamp: Date.now(),
      keyBytes: null,
      valueBytes: Buffer.from("{}"),
      headers: [],
      decodeError: undefined,
    };
    const plan = {
      index: 0,
      record: view,
      decoded: { ok: false, error: new PermanentError("bad") },
    } as unknown as RecordPlan<KafkaRecordView, unknown>;
    plan.outcome = await routing.fail(plan, new PermanentError("bad"));
    expect(plan.outcome).toEqual(done("routed"));
    // The batch stopped before `produce` (a bug outside the records): the record is handed back.
    expect(routing.answer([plan], true)).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: "orders-0", offset: 7 } }],
    });
  });
});
