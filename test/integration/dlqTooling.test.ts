import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import {
  inspectKafkaDeadLetters,
  inspectSqsDeadLetters,
  redriveSqsDeadLetters,
  replayKafkaDeadLetters,
} from "reliable-consumers/dlq";
import { disconnectAllKafkaProducers, getKafkaProducer } from "reliable-consumers/kafka";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { packAttributes, unpackAttributes } from "../../lib/sqs/attributePacking.ts";
import { parkInDeadLetterQueue, toSdkAttributes } from "../../lib/sqs/deadLetter.ts";
import { toSqsEnvelope } from "../../lib/sqs/sqsEnvelope.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { dynamodb, kafka, sqs } from "../support/clients.ts";
import { declareTopics, recordsIn } from "../support/kafkaHarness.ts";
import { names } from "../support/names.ts";
import { describeWithoutSqs, onLocalStack } from "../support/sqsSubstrate.ts";

const name = names(import.meta.url);
const ddb = dynamodb();
const ledgerTable = name("ledger");

beforeAll(() => createDedupTable(ddb, ledgerTable));
afterAll(async () => {
  await disconnectAllKafkaProducers();
  await deleteTable(ddb, ledgerTable);
});

describeWithoutSqs("Kafka dead-letter topic: inspect and replay", () => {
  it("replay returns DLQ records to their original topic exactly once, with filters and a dry run", async () => {
    const topic = name("orders");
    const dlq = `${topic}.DLQ`;
    const dead = (n: number, error: string) => ({
      key: `k${n}`,
      value: JSON.stringify({ n }),
      headers: {
        "x-original-topic": topic,
        "x-original-partition": "0",
        "x-original-offset": String(n),
        "x-retry-count": "3",
        "x-first-failed-at": new Date().toISOString(),
        "x-last-error": error,
        "x-message-id": `m-${n}`,
        "x-consumer": "payments",
        trace: `t-${n}`,
      },
    });
    await declareTopics([topic, dlq]);
    await getKafkaProducer().send(dlq, [
      dead(1, "TransientError: issuer down"),
      dead(2, "SchemaValidationError: amount: expected number"),
      dead(3, "TransientError: issuer down"),
    ]);

    const summary = await inspectKafkaDeadLetters(dlq);
    expect(summary.total).toBe(3);
    expect(Object.fromEntries(Object.entries(summary.byErrorType).map(([t, g]) => [t, g.count]))).toEqual({
      TransientError: 2,
      SchemaValidationError: 1,
    });
    expect(summary.byErrorType.TransientError!.sources).toEqual([topic]);

    const ledger = { tableName: ledgerTable, client: ddb };
    const dry = await replayKafkaDeadLetters(dlq, {
      ledger,
      dryRun: true,
      filter: { errorTypes: ["TransientError"] },
    });
    expect(dry).toMatchObject({ total: 3, seen: 3, moved: 2, skipped: 1 });
    expect(await recordsIn(topic)).toBe(0);

    const progress: number[] = [];
    const first = await replayKafkaDeadLetters(dlq, {
      ledger,
      filter: { errorTypes: ["TransientError"] },
      onProgress: (p) => progress.push(p.seen),
    });
    expect(first).toMatchObject({ moved: 2, skipped: 1, failed: 0, byDestination: { [topic]: 2 } });
    expect(progress.length).toBeGreaterThan(0);
    expect(await recordsIn(topic)).toBe(2);

    const second = await replayKafkaDeadLetters(dlq, { ledger });
    expect(second).toMatchObject({ moved: 1, alreadyReplayed: 2 });
    const third = await replayKafkaDeadLetters(dlq, { ledger });
    expect(third).toMatchObject({ moved: 0, alreadyReplayed: 3 });
    expect(await recordsIn(topic)).toBe(3);

    // What arrived: the same keys, values and user headers; the message id kept; the attempt's context gone.
    const consumer = kafka().consumer({
      groupId: name("check"),
      rebalanceTimeout: 1000,
      maxWaitTimeInMs: 50,
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const got: Record<string, string | undefined>[] = [];
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ message }) => {
            const h = (n: string) => message.headers?.[n]?.toString();
            got.push({
              key: message.key?.toString(),
              value: message.value?.toString(),
              id: h("x-message-id"),
              trace: h("trace"),
              retry: h("x-retry-count"),
              lastError: h("x-last-error"),
              from: h("x-replayed-from")?.split(":")[0],
            });
            if (got.length === 3) resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    expect(got.sort((a, b) => a.key!.localeCompare(b.key!))).toEqual(
      [1, 2, 3].map((n) => ({
        key: `k${n}`,
        value: JSON.stringify({ n }),
        id: `m-${n}`,
        trace: `t-${n}`,
        retry: undefined,
        lastError: undefined,
        from: dlq,
      })),
    );
  });
});

describe("Kafka dead-letter topic: what Lambda's on-failure destination wrote", () => {
  // Issue 26 item 4: the mappings now send what Lambda gives up on (a record that crashed the
  // function) to the DLQ topic, in Lambda's own format: the record's key, no headers, and a JSON
  // document with the failure metadata and the record under `payload`. The value below is AWS's
  // documented example ("Record format for a Kafka destination") with this test's topic, key,
  // value and headers.
  const lambdaLetter = (record: {
    topic: string;
    partition: number;
    offset: number;
    key: string;
    value: string;
    headers: Record<string, string>;
  }) => ({
    key: record.key,
    value: JSON.stringify({
      requestContext: {
        requestId: "e4b46cbf-b738-xmpl-8880-a18cdf61200e",
        functionArn: "arn:aws:lambda:us-east-1:123456789012:function:my-function:$LATEST",
        condition: "RetriesExhausted",
        approximateInvokeCount: 3,
      },
      responseContext: { statusCode: 200, executedVersion: "$LATEST", functionError: "Unhandled" },
      version: "1.0",
      timestamp: "2019-11-14T18:16:05.568Z",
      KafkaBatchInfo: {
        batchSize: 1,
        eventSourceArn: "arn:aws:kafka:us-east-1:123456789012:cluster/my-cluster/abc123",
        bootstrapServers: "b-1.mycluster.abc123.kafka.us-east-1.amazonaws.com:9098",
        payloadSize: 1162,
        recordInfo: { offset: String(record.offset), timestamp: "2019-11-14T18:16:04.835Z" },
      },
      payload: {
        bootstrapServers: "b-1.mycluster.abc123.kafka.us-east-1.amazonaws.com:9098",
        eventSource: "aws:kafka",
        eventSourceArn: "arn:aws:kafka:us-east-1:123456789012:cluster/my-cluster/abc123",
        records: {
          [`${record.topic}-${record.partition}`]: [
            {
              headers: Object.entries(record.headers).map(([k, v]) => ({ [k]: [...Buffer.from(v)] })),
              key: Buffer.from(record.key).toString("base64"),
              offset: record.offset,
              partition: record.partition,
              timestamp: 1749116692330,
              timestampType: "CREATE_TIME",
              topic: record.topic,
              value: Buffer.from(record.value).toString("base64"),
            },
          ],
        },
      },
    }),
  });

  it("inspect groups them by Lambda's condition; replay republishes the record inside to its original topic, once", async () => {
    const topic = name("crashing");
    const retry = `${topic}.retry.5s`;
    const dlq = `${topic}.DLQ`;
    await declareTopics([topic, retry, dlq]);
    await getKafkaProducer().send(dlq, [
      // Crashed on the main topic: no context of ours on it.
      lambdaLetter({
        topic,
        partition: 2,
        offset: 100,
        key: "order-1",
        value: '{"n":1}',
        headers: { trace: "t-1" },
      }),
      // Crashed on a retry rung: it carries the ladder's context, pointing at the original.
      lambdaLetter({
        topic: retry,
        partition: 0,
        offset: 7,
        key: "order-2",
        value: '{"n":2}',
        headers: {
          "message-id": "m-2",
          "x-original-topic": topic,
          "x-original-partition": "1",
          "x-original-offset": "41",
          "x-retry-count": "1",
          "x-last-error": "TransientError: issuer down",
        },
      }),
    ]);

    const summary = await inspectKafkaDeadLetters(dlq);
    expect(summary.total).toBe(2);
    expect(summary.byErrorType.RetriesExhausted).toMatchObject({ count: 2, sources: [topic] });
    expect(summary.byErrorType.RetriesExhausted!.sampleError).toMatch(/after 3 invocations/);

    const ledger = { tableName: ledgerTable, client: ddb };
    expect(
      await replayKafkaDeadLetters(dlq, {
        ledger,
        dryRun: true,
        filter: { errorTypes: ["RetriesExhausted"] },
      }),
    ).toMatchObject({ moved: 2, noDestination: 0, byDestination: { [topic]: 2 } });
    expect(await replayKafkaDeadLetters(dlq, { ledger })).toMatchObject({ moved: 2, failed: 0 });
    expect(await replayKafkaDeadLetters(dlq, { ledger })).toMatchObject({ moved: 0, alreadyReplayed: 2 });

    const consumer = kafka().consumer({
      groupId: name("check-lambda"),
      rebalanceTimeout: 1000,
      maxWaitTimeInMs: 50,
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const got: Record<string, string | undefined>[] = [];
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ message }) => {
            const h = (n: string) => message.headers?.[n]?.toString();
            got.push({
              key: message.key?.toString(),
              value: message.value?.toString(),
              trace: h("trace"),
              messageId: h("message-id"),
              xMessageId: h("x-message-id"),
              original: `${h("x-original-topic")}:${h("x-original-partition")}:${h("x-original-offset")}`,
              retry: h("x-retry-count"),
              lastError: h("x-last-error"),
              from: h("x-replayed-from"),
            });
            if (got.length === 2) resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    expect(got.sort((a, b) => a.key!.localeCompare(b.key!))).toEqual([
      {
        key: "order-1",
        value: '{"n":1}',
        trace: "t-1",
        messageId: undefined,
        // The broker coordinates it was deduplicated by, so a copy is not charged twice.
        xMessageId: `${topic}:2:100`,
        original: `${topic}:2:100`,
        retry: undefined,
        lastError: undefined,
        from: expect.stringMatching(new RegExp(`^${dlq}:\\d+:\\d+$`)),
      },
      {
        key: "order-2",
        value: '{"n":2}',
        trace: undefined,
        messageId: "m-2",
        xMessageId: undefined,
        original: `${topic}:1:41`,
        retry: undefined,
        lastError: undefined,
        from: expect.stringMatching(new RegExp(`^${dlq}:\\d+:\\d+$`)),
      },
    ]);
  });
});

describe("SQS DLQ: inspect and redrive", () => {
  const client = sqs();
  const queues: string[] = [];
  afterAll(async () => {
    for (const q of queues) await client.send(new DeleteQueueCommand({ QueueUrl: q })).catch(() => {});
  });

  async function queue(what: string) {
    const out = await client.send(new CreateQueueCommand({ QueueName: name(what) }));
    queues.push(out.QueueUrl!);
    const attrs = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: out.QueueUrl!, AttributeNames: ["QueueArn"] }),
    );
    return { url: out.QueueUrl!, arn: attrs.Attributes!.QueueArn! };
  }

  async function drain(url: string) {
    const bodies: { body: string; attrs: Record<string, string | undefined> }[] = [];
    for (let empty = 0; empty < 2; ) {
      const out = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          VisibilityTimeout: 120,
          MessageAttributeNames: ["All"],
        }),
      );
      if (!out.Messages?.length) {
        empty++;
        continue;
      }
      for (const m of out.Messages) {
        bodies.push({
          body: m.Body!,
          attrs: Object.fromEntries(
            Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]),
          ),
        });
      }
    }
    return bodies.sort((a, b) => a.body.localeCompare(b.body));
  }

  it("redrive returns DLQ messages to their source queue with nothing lost; inspect and dry runs move nothing", async () => {
    const source = await queue("orders");
    const dlq = await queue("orders-dlq");
    const park = async (body: string, error: string | undefined, user: Record<string, string>) => {
      const userAttrs = Object.fromEntries(
        Object.entries(user).map(([k, v]) => [k, { DataType: "String", StringValue: v }]),
      );
      const attrs = error
        ? packAttributes(userAttrs, {
            "x-original-queue": source.arn,
            "x-last-error": error,
            "x-retry-count": "1",
          })
        : userAttrs;
      await client.send(
        new SendMessageCommand({
          QueueUrl: dlq.url,
          MessageBody: body,
          MessageAttributes: toSdkAttributes(attrs),
        }),
      );
    };
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, `v${i}`]));
    await park("b1", "InvalidJsonError: bad", { tenant: "t1" });
    await park("b2", "InvalidJsonError: bad", {});
    await park("b3", "InvalidJsonError: bad", ten); // all 10 attributes used: context is folded in
    await park("b4", "TransientError: timeout", { tenant: "t4" });
    await park("b5", "TransientError: timeout", {});
    await park("b6", undefined, { tenant: "t6" }); // dead-lettered by SQS itself: no context

    const summary = await inspectSqsDeadLetters(client, dlq.url);
    expect(summary.total).toBe(6);
    expect(Object.fromEntries(Object.entries(summary.byErrorType).map(([t, g]) => [t, g.count]))).toEqual({
      InvalidJsonError: 3,
      TransientError: 2,
      unknown: 1,
    });

    const dry = await redriveSqsDeadLetters(client, dlq.url, { dryRun: true });
    expect(dry).toMatchObject({ moved: 5, noDestination: 1, failed: 0 });

    const invalid = await redriveSqsDeadLetters(client, dlq.url, {
      filter: { errorTypes: ["InvalidJsonError"] },
    });
    expect(invalid).toMatchObject({
      method: "receive-send-delete",
      moved: 3,
      failed: 0,
      byDestination: { [source.url]: 3 },
    });

    const rest = await redriveSqsDeadLetters(client, dlq.url);
    expect(rest).toMatchObject({ moved: 2, noDestination: 1 });
    const last = await redriveSqsDeadLetters(client, dlq.url, { toQueueUrl: source.url });
    expect(last).toMatchObject({ moved: 1 });

    expect(await drain(dlq.url)).toEqual([]);
    const arrived = await drain(source.url);
    expect(arrived.map((a) => a.body)).toEqual(["b1", "b2", "b3", "b4", "b5", "b6"]);
    // The user's attributes come back with the failure context kept beside them (folded when they use all 10).
    expect(arrived[0]!.attrs.tenant).toBe("t1");
    expect(JSON.parse(arrived[0]!.attrs["x-failure-context"]!)).toMatchObject({
      "x-last-error": "InvalidJsonError: bad",
      "x-original-queue": source.arn,
    });
    const folded = unpackAttributes(
      Object.fromEntries(
        Object.entries(arrived[2]!.attrs).map(([k, v]) => [k, { DataType: "String", StringValue: v }]),
      ),
    );
    expect(Object.fromEntries(Object.entries(folded.attributes).map(([k, v]) => [k, v.StringValue]))).toEqual(
      ten,
    );
    expect(folded.context?.["x-last-error"]).toBe("InvalidJsonError: bad");
    expect(arrived[5]!.attrs).toEqual({ tenant: "t6" }); // no context to keep
  });

  it("a redrive whose copies come straight back to the DLQ (a poison message parked again at once) moves each message once and ends", async () => {
    const dlq = await queue("loop-dlq");
    for (const n of ["p1", "p2", "p3"])
      await client.send(
        new SendMessageCommand({
          QueueUrl: dlq.url,
          MessageBody: n,
          MessageAttributes: toSdkAttributes(packAttributes({}, { "x-last-error": "InvalidJsonError: bad" })),
        }),
      );
    // The DLQ as the destination stands in for a consumer that parks each copy again the moment it arrives.
    const result = await redriveSqsDeadLetters(client, dlq.url, { toQueueUrl: dlq.url, useMoveTask: false });
    expect(result).toMatchObject({ moved: 3, failed: 0, seen: 3 });
    expect((await drain(dlq.url)).map((a) => a.body)).toEqual(["p1", "p2", "p3"]);
  });

  it("a letter sent in the very millisecond the redrive begins was there, and moves; one sent a millisecond later stays", async () => {
    const dlq = await queue("edge-dlq");
    const target = await queue("edge-target");
    await client.send(
      new SendMessageCommand({
        QueueUrl: dlq.url,
        MessageBody: "edge",
        MessageAttributes: toSdkAttributes(packAttributes({}, { "x-last-error": "TransientError: t" })),
      }),
    );
    const peek = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: dlq.url,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 0,
        MessageSystemAttributeNames: ["SentTimestamp"],
      }),
    );
    const sentAt = Number(peek.Messages![0]!.Attributes!.SentTimestamp);
    // Our clock is held where the redrive reads its start (only Date: SQS's clock, and timers, run on).
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const options = { toQueueUrl: target.url, useMoveTask: false };
      vi.setSystemTime(sentAt - 1);
      expect(await redriveSqsDeadLetters(client, dlq.url, options)).toMatchObject({ moved: 0, seen: 0 });
      vi.setSystemTime(sentAt);
      expect(await redriveSqsDeadLetters(client, dlq.url, options)).toMatchObject({ moved: 1, seen: 1 });
    } finally {
      vi.useRealTimers();
    }
    expect((await drain(target.url)).map((a) => a.body)).toEqual(["edge"]);
  });

  it("redrive to a named queue uses SQS's own StartMessageMoveTask where the endpoint has it, receive-send-delete where not; nothing lost", async () => {
    const dlq = await queue("moved-dlq");
    // A real redrive source: SQS (and LocalStack) start a move task only from a queue that is some
    // queue's dead-letter queue ("Source queue must be configured as a Dead Letter Queue").
    const out = await client.send(
      new CreateQueueCommand({
        QueueName: name("moved"),
        Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }) },
      }),
    );
    queues.push(out.QueueUrl!);
    const source = out.QueueUrl!;
    for (const n of ["m1", "m2", "m3"]) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: dlq.url,
          MessageBody: n,
          MessageAttributes: toSdkAttributes(packAttributes({}, { "x-last-error": "TransientError: t" })),
        }),
      );
    }
    const result = await redriveSqsDeadLetters(client, dlq.url, { toQueueUrl: source });
    // fauxqs has no StartMessageMoveTask (InvalidAction), so this path ran only on AWS until
    // LocalStack's pass: there SQS moves the messages itself, attributes as they were.
    expect(result).toMatchObject({
      method: onLocalStack ? "StartMessageMoveTask" : "receive-send-delete",
      moved: 3,
      failed: 0,
    });
    expect(await drain(dlq.url)).toEqual([]);
    const arrived = await drain(source);
    expect(arrived.map((a) => a.body)).toEqual(["m1", "m2", "m3"]);
    for (const a of arrived)
      expect(JSON.parse(a.attrs["x-failure-context"]!)).toMatchObject({
        "x-last-error": "TransientError: t",
      });
  });

  it("a fair queue's letter is redriven in its tenant (its MessageGroupId), where the DLQ returns it (issue 26 item 8)", async () => {
    const source = await queue("fair");
    const dlq = await queue("fair-dlq");
    // What the consumer parks for a fair queue's record: the tenant kept (sqsConsumer.test.ts).
    await client.send(
      new SendMessageCommand({
        QueueUrl: dlq.url,
        MessageBody: "f1",
        MessageGroupId: "tenant-a",
        MessageAttributes: toSdkAttributes(
          packAttributes({}, { "x-original-queue": source.arn, "x-last-error": "TransientError: t" }),
        ),
      }),
    );
    const sends: { MessageGroupId?: string }[] = [];
    const watched = sqs();
    watched.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === "SendMessageBatchCommand")
          sends.push(...((args.input as { Entries: { MessageGroupId?: string }[] }).Entries ?? []));
        return next(args);
      },
      { step: "initialize", name: "recordSends" },
    );
    expect(await redriveSqsDeadLetters(watched, dlq.url)).toMatchObject({ moved: 1, failed: 0 });
    // SQS and LocalStack return a standard queue's group id; fauxqs 2.4.1 drops it on send, so
    // there is no tenant to keep (sqsSemantics.test.ts).
    expect(sends.map((e) => e.MessageGroupId)).toEqual([onLocalStack ? "tenant-a" : undefined]);
    expect((await drain(source.url)).map((a) => a.body)).toEqual(["f1"]);
  });

  it("a redriven copy parked again keeps its original's x-message-id in the new context", async () => {
    const dlq = await queue("again-dlq");
    const record = {
      messageId: "copy-id",
      receiptHandle: "rh",
      body: "{}",
      attributes: { ApproximateReceiveCount: "1" },
      messageAttributes: {
        "x-failure-context": { dataType: "String", stringValue: '{"x-message-id":"original-id"}' },
      },
      md5OfBody: "",
      eventSource: "aws:sqs",
      eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders",
      awsRegion: "us-east-1",
    } as unknown as SQSRecord;
    await parkInDeadLetterQueue(client, dlq.url, record, {
      retryCount: 0,
      firstFailedAt: new Date().toISOString(),
      lastError: { type: "TransientError", message: "again" },
      messageId: "copy-id",
      consumer: "c",
    });
    const [letter] = (
      await client.send(
        new ReceiveMessageCommand({ QueueUrl: dlq.url, WaitTimeSeconds: 1, MessageAttributeNames: ["All"] }),
      )
    ).Messages!;
    const context = JSON.parse(letter!.MessageAttributes!["x-failure-context"]!.StringValue!) as Record<
      string,
      string
    >;
    expect(context).toMatchObject({ "x-message-id": "original-id", "x-last-error": "TransientError: again" });
  });

  it("a redriven copy keeps x-message-id, so the consumer dedups it under the original's id", async () => {
    const source = await queue("pay");
    const dlq = await queue("pay-dlq");
    // As the consumer parks a message with no business key and no producer id: its dedup id was its SQS message id.
    const parked = async (attrs: Record<string, string>, original: string) =>
      client.send(
        new SendMessageCommand({
          QueueUrl: dlq.url,
          MessageBody: `{"n":"${original}"}`,
          MessageAttributes: toSdkAttributes(
            packAttributes(
              Object.fromEntries(
                Object.entries(attrs).map(([k, v]) => [k, { DataType: "String", StringValue: v }]),
              ),
              {
                "x-original-queue": source.arn,
                "x-last-error": "TransientError: timeout",
                "x-message-id": original,
                "x-retry-count": "3",
              },
            ),
          ),
        }),
      );
    await parked({ tenant: "t" }, "sqs-original-1");
    await parked(
      Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, `v${i}`])),
      "sqs-original-2",
    );
    expect(await redriveSqsDeadLetters(client, dlq.url)).toMatchObject({ moved: 2, failed: 0 });
    // One receive may return fewer messages than the queue holds (SQS samples; LocalStack's long
    // poll answers with the first): receive until both copies are in hand, a bounded number of times.
    const copies: Message[] = [];
    for (let i = 0; i < 10 && copies.length < 2; i++) {
      const out = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: source.url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          VisibilityTimeout: 120,
          MessageAttributeNames: ["All"],
          MessageSystemAttributeNames: ["All"],
        }),
      );
      copies.push(...(out.Messages ?? []));
    }
    expect(copies).toHaveLength(2);
    const ids = await Promise.all(
      copies.map(async (m) => {
        const envelope = await toSqsEnvelope<{ n: string }>(
          {
            messageId: m.MessageId!,
            receiptHandle: m.ReceiptHandle!,
            body: m.Body!,
            attributes: { ApproximateReceiveCount: "1" } as SQSRecord["attributes"],
            messageAttributes: Object.fromEntries(
              Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
                k,
                {
                  dataType: v.DataType!,
                  stringValue: v.StringValue,
                } as SQSRecord["messageAttributes"][string],
              ]),
            ),
            md5OfBody: "",
            eventSource: "aws:sqs",
            eventSourceARN: source.arn,
            awsRegion: "us-east-1",
          },
          {},
        );
        expect(envelope.id).not.toBe(m.MessageId);
        return { n: envelope.body.n, id: envelope.id, idSource: envelope.idSource };
      }),
    );
    expect(ids.sort((a, b) => a.n.localeCompare(b.n))).toEqual([
      { n: "sqs-original-1", id: "sqs-original-1", idSource: "producer" },
      { n: "sqs-original-2", id: "sqs-original-2", idSource: "producer" },
    ]);
  });
});
