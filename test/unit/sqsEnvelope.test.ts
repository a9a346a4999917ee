import type { SQSRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toSqsEnvelope } from "../../lib/sqs/sqsEnvelope.ts";
import { assertSqsEvent, parseQueueArn } from "../../lib/sqs/sqsEvent.ts";

const record = (body: string, extra: Partial<SQSRecord> = {}): SQSRecord => ({
  messageId: "mid-1",
  receiptHandle: "rh",
  body,
  attributes: {
    ApproximateReceiveCount: "3",
    SentTimestamp: "0",
    SenderId: "s",
    ApproximateFirstReceiveTimestamp: "0",
  },
  messageAttributes: {},
  md5OfBody: "",
  eventSource: "aws:sqs",
  eventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo",
  awsRegion: "us-east-1",
  ...extra,
});

const Order = z.object({ orderId: z.string(), amount: z.number().positive() });

describe("toSqsEnvelope", () => {
  it("parses, validates and keys a record", async () => {
    const env = await toSqsEnvelope(record('{"orderId":"o1","amount":5}'), {
      schema: Order,
      key: (o) => o.orderId,
    });
    expect(env).toMatchObject({
      id: "o1",
      idSource: "business",
      body: { orderId: "o1", amount: 5 },
      attempt: 3,
    });
    expect(env.source).toEqual({ kind: "sqs", queueArn: record("").eventSourceARN, messageId: "mid-1" });
  });

  it("falls back to the message-id attribute, then the SQS messageId", async () => {
    const withAttr = record("{}", {
      messageAttributes: {
        "message-id": { dataType: "String", stringValue: "p-1", stringListValues: [], binaryListValues: [] },
      },
    });
    expect((await toSqsEnvelope(withAttr, {})).idSource).toBe("producer");
    expect(await toSqsEnvelope(record("{}"), {})).toMatchObject({ id: "mid-1", idSource: "broker" });
  });

  it("throws typed permanent errors for bad input", async () => {
    await expect(toSqsEnvelope(record("{oops"), {})).rejects.toMatchObject({
      name: "InvalidJsonError",
      kind: "permanent",
    });
    await expect(toSqsEnvelope(record('{"orderId":1}'), { schema: Order })).rejects.toMatchObject({
      name: "SchemaValidationError",
    });
    await expect(
      toSqsEnvelope(record('{"orderId":"","amount":1}'), { schema: Order, key: (o) => o.orderId }),
    ).rejects.toMatchObject({ name: "MissingIdError" });
    await expect(toSqsEnvelope(record(`"${"x".repeat(100)}"`), { maxBodyBytes: 50 })).rejects.toMatchObject({
      name: "PayloadTooLargeError",
    });
  });
});

describe("SQS event shape", () => {
  it("parses queue ARNs and spots FIFO queues", () => {
    expect(parseQueueArn("arn:aws:sqs:eu-west-1:123456789012:jobs.fifo")).toMatchObject({
      region: "eu-west-1",
      accountId: "123456789012",
      name: "jobs.fifo",
      fifo: true,
    });
    expect(() => parseQueueArn("arn:aws:sns:x:y:z")).toThrow(/not an SQS queue ARN/);
  });
  it("rejects events that are not SQS batches", () => {
    expect(() => assertSqsEvent({})).toThrow(/Records array/);
    expect(() => assertSqsEvent({ Records: [{ eventSource: "aws:kafka" }] })).toThrow(/not an SQS record/);
    expect(() => assertSqsEvent({ Records: [record("{}")] })).not.toThrow();
  });
});
