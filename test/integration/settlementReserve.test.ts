/**
 * Issue 34 item 8: the time left after the run. What comes after the run (completions, parking,
 * the requeue, the retry visibilities, the Kafka produce) has Lambda time of its own, and every
 * call of it ends by the settlement deadline, so that the batch answers before Middy's early
 * timeout instead of failing whole there (and, on a last receive, letting SQS dead-letter finished
 * records without context).
 *
 * The Lambda's remaining time and every deadline timer run on a clock the test moves
 * (`manualClock`); Middy's early timeout is modelled on it as the event that would fail the batch
 * (the batch function gets its signal, as Middy passes it). Real SQS (fauxqs) and DynamoDB.
 */
import { type AddressInfo, createServer, type Socket } from "node:net";
import { ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse } from "aws-lambda";
import { TransientError } from "reliable-consumers";
import { createSqsClient } from "reliable-consumers/sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LAMBDA_DEADLINE } from "../../lib/batch/lambdaDeadline.ts";
import { createKafkaBatchProcessor } from "../../lib/kafka/kafkaBatchProcessor.ts";
import type { KafkaBatchResponse } from "../../lib/kafka/partialResponse.ts";
import { createKafkaProducer } from "../../lib/kafka/producer.ts";
import { createSqsBatchProcessor } from "../../lib/sqs/sqsBatchProcessor.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { toSqsRecord } from "../../local/src/services/sqs/trigger.ts";
import { dynamodb } from "../support/clients.ts";
import { manualClock } from "../support/manualClock.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, drainQueue, sendAll, type TestQueue } from "../support/queues.ts";
import { recordingTelemetry } from "../support/telemetry.ts";

const name = names(import.meta.url);
const table = name("dedup");
const ddb = dynamodb();
const sqs = createSqsClient();
const queues: TestQueue[] = [];
const MIDDY = "Middy's early timeout";
// Middy's own default before the fix (5 ms), which nothing answered before.
const middyEarlyMs = LAMBDA_DEADLINE?.middyEarlyMs ?? 5;

beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await deleteTable(ddb, table);
  await Promise.all(queues.map((q) => deleteQueues(sqs, q)));
});

/** Sends the bodies (as JSON strings) and receives them back as one Lambda SQS event. */
async function batchOf(q: TestQueue, bodies: string[]) {
  await sendAll(
    sqs,
    q.url,
    bodies.map((body) => ({ body: JSON.stringify(body) })),
  );
  const messages = [];
  while (messages.length < bodies.length) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: q.url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ["All"],
        MessageAttributeNames: ["All"],
      }),
    );
    messages.push(...(out.Messages ?? []));
  }
  return { Records: messages.map((m) => toSqsRecord(m, q.arn)) };
}

const bodyOf = (event: Awaited<ReturnType<typeof batchOf>>, id: string) =>
  JSON.parse(event.Records.find((r) => r.messageId === id)!.body) as string;
const idOf = (event: Awaited<ReturnType<typeof batchOf>>, body: string) =>
  event.Records.find((r) => r.body === JSON.stringify(body))!.messageId;

/** A latch the test opens, and one the code under test opens for the test. */
function latch() {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { open, opened };
}

/** Middy, as the batch function sees it: a signal it aborts at its early timeout, on the test's clock. */
function middyOn(clock: ReturnType<typeof manualClock>) {
  const abort = new AbortController();
  const state = { timedOut: false };
  clock.whenRemaining(middyEarlyMs, MIDDY, () => {
    state.timedOut = true;
    abort.abort();
  });
  return { signal: abort.signal, state };
}

/** Lets every pending promise callback run (no I/O is awaited here). */
const settleMicrotasks = () => new Promise((r) => setImmediate(r));

describe("issue 34 item 8: the settlement has Lambda time of its own", () => {
  it("a run that ends near the timeout: finished records acked, a record that stops at its signal parked with its context, one that does not handed back, all before Middy's early timeout", async () => {
    // Every record is on its last receive: the queue's own redrive would dead-letter what is not acked.
    const q = await createQueueWithDlq(sqs, name("last-receive"), { maxReceiveCount: 1 });
    queues.push(q);
    const started = { stops: latch(), ignores: latch() };
    const fastDone = latch();
    const releaseIgnorer = latch();
    const ignorerEnded = latch();
    const clock = manualClock(30_000);
    const process = createSqsBatchProcessor<string>(
      async ({ body }, { signal }) => {
        if (body === "fast") return fastDone.open();
        if (body === "stops") {
          started.stops.open();
          // Works until its signal aborts, then stops with its reason, as a handler should.
          await new Promise((_, reject) =>
            signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
          );
        }
        started.ignores.open();
        await releaseIgnorer.opened; // never looks at its signal
        ignorerEnded.open();
      },
      {
        idempotency: { tableName: table, scope: "last-receive" },
        heartbeat: false,
        sqsClient: sqs,
        dynamodbClient: ddb,
        telemetry: recordingTelemetry(),
        timer: clock.timer,
      },
    );
    const event = await batchOf(q, ["fast", "stops", "ignores"]);
    const middy = middyOn(clock);
    const answer = process(event, clock.context(), middy.signal);
    await Promise.all([fastDone.opened, started.stops.opened, started.ignores.opened]);

    // The first deadline to come is the run's, with the settlement reserve still ahead.
    const first = clock.next();
    expect(first.labels, "the first deadline to pass").not.toContain(MIDDY);
    await settleMicrotasks(); // "stops" stops at its signal; it is being parked
    // The cut-off: "ignores" is still inside its handler, so it is abandoned; "stops" settles.
    clock.next();
    const response = (await answer) as SQSBatchResponse;
    expect({
      failed: response.batchItemFailures.map((f) => bodyOf(event, f.itemIdentifier)),
      middyTimedOut: middy.state.timedOut,
    }).toEqual({ failed: ["ignores"], middyTimedOut: false });
    expect(clock.remainingMs()).toBeGreaterThan(middyEarlyMs);

    const parked = await drainQueue(sqs, q.dlqUrl, 0);
    expect(parked.map((m) => JSON.parse(m.Body!))).toEqual(["stops"]);
    expect(JSON.stringify(parked[0]!.MessageAttributes)).toContain("RecordTimeoutError");
    // The abandoned run ends later; nothing of it fails the process.
    releaseIgnorer.open();
    await ignorerEnded.opened;
  });

  it("a settlement call that hangs is cut at the settlement deadline: the answer still comes before Middy's early timeout", async () => {
    const q = await createQueueWithDlq(sqs, name("hung-visibility"), { maxReceiveCount: 5 });
    queues.push(q);
    const client = createSqsClient();
    const visibilityCalled = latch();
    // ChangeMessageVisibilityBatch (the answer's retry visibility) that never answers.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== "ChangeMessageVisibilityBatchCommand") return next(args);
        visibilityCalled.open();
        return new Promise<never>(() => undefined);
      },
      { step: "initialize", name: "hangVisibility" },
    );
    const clock = manualClock(30_000);
    const process = createSqsBatchProcessor<string>(
      async () => {
        throw new TransientError("dependency down");
      },
      {
        idempotency: false,
        heartbeat: false,
        sqsClient: client,
        dynamodbClient: ddb,
        telemetry: recordingTelemetry(),
        timer: clock.timer,
      },
    );
    const event = await batchOf(q, ["flaky"]);
    const middy = middyOn(clock);
    let answered: SQSBatchResponse | undefined;
    const answer = process(event, clock.context(), middy.signal).then((r) => (answered = r));
    await visibilityCalled.opened;
    // Move the clock, deadline by deadline, until the batch answers or Middy would have failed it.
    while (!answered && !middy.state.timedOut && clock.pending() > 0) {
      clock.next();
      await settleMicrotasks();
    }
    expect(
      { answered: answered !== undefined, middyTimedOut: middy.state.timedOut },
      "the answer waited on a hung visibility call",
    ).toEqual({ answered: true, middyTimedOut: false });
    expect(answered?.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([idOf(event, "flaky")]);
    await answer;
  });
});

describe("issue 34 item 8: the Kafka produce to the retry topics is bounded too", () => {
  it("a produce that does not answer is cut at the settlement deadline: its record is handed back, before Middy's early timeout", async () => {
    // A broker that accepts connections and never answers: the produce request stays open.
    const reached = latch();
    const sockets: Socket[] = [];
    const blackHole = createServer((socket) => {
      sockets.push(socket);
      reached.open();
    });
    await new Promise<void>((r) => blackHole.listen(0, "127.0.0.1", r));
    const port = (blackHole.address() as AddressInfo).port;
    const producer = createKafkaProducer({
      brokers: [`127.0.0.1:${port}`],
      idempotent: false,
      retry: { retries: 0 },
    });
    const clock = manualClock(30_000);
    const process = createKafkaBatchProcessor<{ a: number }>(
      async () => {
        throw new TransientError("dependency down");
      },
      {
        consumer: "settlement-kafka",
        idempotency: false,
        producer,
        dynamodbClient: ddb,
        telemetry: recordingTelemetry(),
        timer: clock.timer,
      },
    );
    const middy = middyOn(clock);
    let answered: KafkaBatchResponse | undefined;
    const answer = process(
      {
        eventSource: "aws:kafka",
        records: {
          "orders-0": [
            {
              topic: "orders",
              partition: 0,
              offset: 7,
              timestamp: Date.now(),
              timestampType: "CREATE_TIME",
              key: Buffer.from("k").toString("base64"),
              value: Buffer.from('{"a":1}').toString("base64"),
              headers: [],
            },
          ],
        },
      },
      clock.context(),
      middy.signal,
    ).then((r) => (answered = r));
    try {
      await reached.opened; // the produce to orders.retry.5s is under way
      while (!answered && !middy.state.timedOut && clock.pending() > 0) {
        clock.next();
        await settleMicrotasks();
      }
      expect(
        { answered: answered !== undefined, middyTimedOut: middy.state.timedOut },
        "the answer waited on a produce that did not answer",
      ).toEqual({ answered: true, middyTimedOut: false });
      expect(answered?.batchItemFailures).toEqual([{ itemIdentifier: { partition: "orders-0", offset: 7 } }]);
      await answer;
    } finally {
      for (const s of sockets) s.destroy();
      blackHole.close();
      await producer.disconnect().catch(() => undefined);
    }
  });
});
