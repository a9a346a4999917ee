/**
 * The SQS behaviours our consumers touch where fauxqs, LocalStack's SQS (2026.3.0) and SQS's own
 * documentation do not all agree. Each test runs on both substrates (test/support/sqsSubstrate.ts)
 * and asserts what each does, beside what SQS documents, and says whether our code depends on it.
 * docs/local.md lists the same, as a table.
 */

import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { createDedupStore } from "reliable-consumers";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { names } from "../support/names.ts";
import { arnOf, sendAll } from "../support/queues.ts";
import { onLocalStack, SQS_NAME } from "../support/sqsSubstrate.ts";

const name = names(import.meta.url);
const sqs = createSqsClient();
const ddb = new DynamoDBClient({});
const table = name("dedup");
const created: string[] = [];
beforeAll(() => createDedupTable(ddb, table));
afterAll(async () => {
  await deleteTable(ddb, table);
  await Promise.allSettled(created.map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))));
});

async function queue(what: string, fifo = false): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: name(what) + (fifo ? ".fifo" : ""),
      Attributes: { VisibilityTimeout: "30", ...(fifo ? { FifoQueue: "true" } : {}) },
    }),
  );
  created.push(QueueUrl!);
  return QueueUrl!;
}

const receive = async (url: string, waitSeconds = 1): Promise<Message[]> =>
  (
    await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: waitSeconds }),
    )
  ).Messages ?? [];

/** A receive as the SQS trigger makes it: with the system attributes (the group id among them). */
const receiveAll = async (url: string): Promise<Message[]> =>
  (
    await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ["All"],
        MessageAttributeNames: ["All"],
      }),
    )
  ).Messages ?? [];

const group = (ids: string[], groupId = "g") => ids.map((id) => ({ body: id, groupId, dedupId: id }));

/** Makes a received message visible again at once (no clock involved). */
const release = (url: string, m: Message) =>
  sqs.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: url,
      ReceiptHandle: m.ReceiptHandle,
      VisibilityTimeout: 0,
    }),
  );

describe(`SQS semantics on ${SQS_NAME}, beside SQS's documentation`, () => {
  it("FIFO: one receive hands out several messages of a group, in order (fauxqs: one per group)", async () => {
    const url = await queue("fifo-batch", true);
    await sendAll(sqs, url, [...group(["a1", "a2", "a3"], "a"), ...group(["b1"], "b")]);
    const bodies = (await receive(url)).map((m) => m.Body);
    // SQS returns up to 10 messages of one group per receive, in order; LocalStack does so. fauxqs
    // returns one per group, which is why sqsConsumer.test.ts builds its FIFO batches by hand. Our
    // code does not depend on it: the SQS trigger's batch is whatever a receive returns.
    expect(bodies).toEqual(onLocalStack ? ["a1", "a2", "a3", "b1"] : ["a1", "b1"]);
  });

  it("FIFO: a record handed back with a retry delay keeps its group waiting; the group then comes in order", async () => {
    const url = await queue("fifo-retry", true);
    const arn = await arnOf(sqs, url);
    await sendAll(
      sqs,
      url,
      ["m1", "m2", "m3"].map((id) => ({ body: JSON.stringify({ id }), groupId: "g", dedupId: id })),
    );
    // m1's key is held by another invocation for a minute: m1 is handed back for that long.
    const scope = name("fifo-retry");
    const other = createDedupStore({ tableName: table, scope, client: ddb, leaseMs: 60_000 });
    const held = await other.claim("m1");
    if (held.status !== "claimed") throw new Error(`expected to hold m1, got ${held.status}`);
    const ran: string[] = [];
    const handler = sqsConsumer<{ id: string }>(
      async ({ body }) => {
        ran.push(body.id);
      },
      { key: (b) => b.id, idempotency: { tableName: table, scope }, heartbeat: false },
    );
    // The SQS trigger: receive, invoke, delete what succeeded; the batches' records kept for their handles.
    const batches: SQSRecord[][] = [];
    const trigger = { queueUrl: url, queueArn: arn, functionName: "f" };
    const invoke = () =>
      invokeFromQueue(
        sqs,
        (event, context) => {
          batches.push(event.Records);
          return handler(event, context);
        },
        trigger,
      );
    const first = await invoke();
    // SQS and LocalStack hand out the whole group, fauxqs its head only (the row above).
    expect(batches[0]?.map((r) => JSON.parse(r.body).id)).toEqual(onLocalStack ? ["m1", "m2", "m3"] : ["m1"]);
    expect(first.failed).toHaveLength(first.received);
    expect(ran).toEqual([]);
    // While m1 waits, no receive hands out m2 or m3. SQS holds a group back while an earlier message
    // is in flight; LocalStack 2026.3.0 does not for a message set to visibility 0 (it handed m2 and
    // m3 out at once, ahead of m1), so the settlement gives the records held back behind a failing
    // one the failing one's delay (sqsAnswer), which changes nothing on SQS.
    expect(await receiveAll(url)).toEqual([]);
    // The test's clock: the minute is over, the holder done.
    await other.release(held.lease);
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: batches[0]!.map((r, i) => ({
          Id: String(i),
          ReceiptHandle: r.receiptHandle,
          VisibilityTimeout: 0,
        })),
      }),
    );
    for (let round = 0; round < 5 && ran.length < 3; round++) await invoke();
    expect(ran).toEqual(["m1", "m2", "m3"]);
  });

  it("a fair queue (a standard queue whose producer sets MessageGroupId) returns the group id on receive (fauxqs drops it)", async () => {
    const url = await queue("fair");
    await sendAll(sqs, url, [{ body: "t1", groupId: "tenant-a" }, { body: "u" }]);
    const received = (await receiveAll(url)).map((m) => [m.Body, m.Attributes?.MessageGroupId]);
    // SQS (fair queues, July 2025): the group id names the message's tenant and comes back with the
    // system attributes, with no FIFO sequence number; LocalStack does so. fauxqs 2.4.1 accepts the
    // send and drops the id. Our code does not depend on it: a standard queue is never given FIFO
    // lanes, and what is sent on (a requeued copy, a parked letter, a redrive) keeps the id when the
    // record has one; on fauxqs there is none to keep (sqsConsumer.test.ts builds fair records).
    expect(received.sort()).toEqual([
      ["t1", onLocalStack ? "tenant-a" : undefined],
      ["u", undefined],
    ]);
  });

  it("FIFO: deleting with a receipt handle whose visibility ended fails (fauxqs deletes)", async () => {
    const url = await queue("fifo-expired", true);
    await sendAll(sqs, url, group(["x"]));
    const [m] = await receive(url);
    await release(url, m!); // visible again: the handle has expired
    const deleted = sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m!.ReceiptHandle }));
    // SQS (FIFO): InvalidParameterValue, "The receipt handle has expired"; LocalStack the same.
    // fauxqs deletes the message. Our code copes with both: a batch whose delete fails is delivered
    // again and its records are duplicates to the dedup store.
    if (onLocalStack)
      await expect(deleted).rejects.toMatchObject({ name: expect.stringMatching(/InvalidParameterValue$/) });
    else await expect(deleted).resolves.toBeDefined();
  });

  it("a visibility change with the handle of a message that is visible again: fauxqs refuses it as SQS does, LocalStack ignores it", async () => {
    const url = await queue("late-beat");
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "job" }));
    const [m] = await receive(url);
    await release(url, m!);
    // A heartbeat that lands after the message came back. SQS answers MessageNotInflight (its API
    // reference: such a change "might result in an error"); fauxqs too. LocalStack answers 200 and
    // changes nothing. The heartbeat counts its errors and never relies on them.
    const change = sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: m!.ReceiptHandle,
        VisibilityTimeout: 30,
      }),
    );
    if (onLocalStack) await expect(change).resolves.toBeDefined();
    else await expect(change).rejects.toMatchObject({ name: expect.stringMatching(/MessageNotInflight$/) });
    expect((await receive(url, 0)).map((x) => x.Body)).toEqual(["job"]);
  });

  it("a visibility timeout past SQS's 12 hours: fauxqs refuses it as SQS does, LocalStack accepts it", async () => {
    const url = await queue("cap");
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "long" }));
    const [m] = await receive(url);
    const change = sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: m!.ReceiptHandle,
        VisibilityTimeout: 43_201,
      }),
    );
    // Our heartbeat caps every extension at 43,200 s counted from the receive (visibility.ts), so it
    // does not depend on the emulator refusing.
    if (onLocalStack) await expect(change).resolves.toBeDefined();
    else
      await expect(change).rejects.toMatchObject({ name: expect.stringMatching(/InvalidParameterValue$/) });
  });

  it("more than 10 message attributes: SQS refuses them, neither emulator does", async () => {
    const url = await queue("attrs");
    const eleven = Object.fromEntries(
      Array.from({ length: 11 }, (_, i) => [`a${i}`, { DataType: "String", StringValue: String(i) }]),
    );
    // SQS: InvalidParameterValue, "Number of message attributes [11] exceeds the allowed maximum [10]".
    // Our dead-letter context is packed so that a message never carries more than 10
    // (core/attributePacking.ts); the check that would catch a regression is the enforcement layer
    // of the local runtime, not the emulators.
    const sent = await sqs.send(
      new SendMessageCommand({ QueueUrl: url, MessageBody: "m", MessageAttributes: eleven }),
    );
    expect(sent.MessageId).toBeDefined();
  });

  it("a batch delete with a handle that is no receipt handle at all: LocalStack fails the entry as SQS does, fauxqs succeeds", async () => {
    const url = await queue("garbage");
    const out = await sqs.send(
      new DeleteMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: "1", ReceiptHandle: "not-a-handle" }] }),
    );
    // SQS: the entry fails with ReceiptHandleIsInvalid. The local trigger treats a failed delete as
    // "delivered again later", which is safe either way.
    if (onLocalStack) expect(out.Failed?.map((f) => f.Code)).toEqual(["ReceiptHandleIsInvalid"]);
    else expect(out.Successful?.map((s) => s.Id)).toEqual(["1"]);
  });
});
