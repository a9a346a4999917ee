import avsc from "avsc";
import type { DynamoDBRecord, KinesisStreamRecord } from "aws-lambda";
import { avro, type SchemaRegistry } from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { done, unfinished } from "../../lib/batch/recordOutcome.ts";
import { removedByTtl, toDynamoDbStreamEnvelope } from "../../lib/dynamodb-streams/dynamodbStreamEnvelope.ts";
import { itemKeyOf } from "../../lib/dynamodb-streams/streamImage.ts";
import { writeGlueFrame } from "../../lib/kafka/schemas/wireFormat.ts";
import { kinesisData, toKinesisEnvelope } from "../../lib/kinesis/kinesisEnvelope.ts";
import { assertKinesisEvent, kinesisBrokerId, shardIdOf } from "../../lib/kinesis/kinesisEvent.ts";
import { CONTEXT_ATTRIBUTE } from "../../lib/sqs/attributePacking.ts";
import { parkedPayloadOf } from "../../lib/streams/parkedPayload.ts";
import { streamBatchResponse } from "../../lib/streams/streamAnswer.ts";
import { streamLaneOf } from "../../lib/streams/streamLanes.ts";
import { parkedMessage } from "../../lib/streams/streamParking.ts";

const STREAM = "arn:aws:kinesis:us-east-1:000000000000:stream/clicks";

function kinesisRecord(data: Buffer | string, sequenceNumber = "100", shard = "shardId-000000000003") {
  return {
    kinesis: {
      kinesisSchemaVersion: "1.0",
      partitionKey: "pk",
      sequenceNumber,
      data: Buffer.isBuffer(data) ? data.toString("base64") : data,
      approximateArrivalTimestamp: 1.5,
    },
    eventSource: "aws:kinesis",
    eventVersion: "1.0",
    eventID: `${shard}:${sequenceNumber}`,
    eventName: "aws:kinesis:record",
    invokeIdentityArn: "arn:aws:iam::000000000000:role/r",
    awsRegion: "us-east-1",
    eventSourceARN: STREAM,
  } satisfies KinesisStreamRecord;
}

describe("the stream answer (streamBatchResponse)", () => {
  const at = (seq: string, shardId = "s-1") => ({ streamArn: STREAM, shardId, sequenceNumber: seq });
  it("reports each shard's first record not done, and only it", () => {
    const plans = [
      { record: at("1"), outcome: done("processed") },
      { record: at("2"), outcome: unfinished(new Error("x")) },
      { record: at("3"), outcome: done("processed") },
      { record: at("4"), outcome: unfinished(new Error("y")) },
      { record: at("5", "s-2"), outcome: done("parked") },
      { record: at("6", "s-2") },
    ];
    expect(streamBatchResponse(plans, (r) => r)).toEqual({
      batchItemFailures: [{ itemIdentifier: "2" }, { itemIdentifier: "6" }],
    });
  });
  it("is empty when every record is done", () => {
    expect(streamBatchResponse([{ record: at("1"), outcome: done("duplicate") }], (r) => r)).toEqual({
      batchItemFailures: [],
    });
  });
});

describe("lanes", () => {
  it("one per shard, or per key within the shard", () => {
    const c = { streamArn: STREAM, shardId: "s-1", sequenceNumber: "1" };
    expect(streamLaneOf("shard", c, "a")).toBe(streamLaneOf("shard", c, "b"));
    expect(streamLaneOf("key", c, "a")).not.toBe(streamLaneOf("key", c, "b"));
    expect(streamLaneOf("key", c, "a")).not.toBe(streamLaneOf("key", { ...c, shardId: "s-2" }, "a"));
  });
});

describe("parking a stream record", () => {
  it("keeps text as it is; bytes and text SQS refuses go as base64; an empty payload has a placeholder", () => {
    expect(parkedPayloadOf(Buffer.from('{"a":1}'))).toEqual({ body: '{"a":1}', encoding: "text" });
    expect(parkedPayloadOf(Buffer.from([0xff, 0xfe]))).toEqual({ body: "//4=", encoding: "base64" });
    expect(parkedPayloadOf(Buffer.from("a\u0000b"))).toEqual({ body: "YQBi", encoding: "base64" });
    expect(parkedPayloadOf(Buffer.alloc(0))).toEqual({ body: "-", encoding: "empty" });
  });
  it("packs the context, says the encoding, and groups by key on a FIFO queue", () => {
    const context = {
      retryCount: 0,
      firstFailedAt: "2026-01-01T00:00:00.000Z",
      lastError: { type: "InvalidJsonError", message: "bad" },
      messageId: "m",
      consumer: "c",
      originalTopic: STREAM,
      originalPartition: "shardId-000000000003",
      originalOffset: "100",
    };
    const coordinates = { streamArn: STREAM, shardId: "shardId-000000000003", sequenceNumber: "100" };
    const fifo = parkedMessage("https://q/parked.fifo", {
      payload: { body: "//4=", encoding: "base64" },
      coordinates,
      orderingKey: "pk",
      context,
    });
    expect(fifo.MessageAttributes["x-payload-encoding"]).toEqual({
      DataType: "String",
      StringValue: "base64",
    });
    expect(JSON.parse(fifo.MessageAttributes[CONTEXT_ATTRIBUTE]!.StringValue!)).toMatchObject({
      "x-original-topic": STREAM,
      "x-original-partition": "shardId-000000000003",
      "x-original-offset": "100",
    });
    expect(fifo).toMatchObject({ MessageGroupId: "pk", MessageBody: "//4=" });
    expect(fifo.MessageDeduplicationId).toBe(`${STREAM}/shardId-000000000003/100`);
    const plain = parkedMessage("https://q/parked", {
      payload: { body: "x", encoding: "text" },
      coordinates,
      orderingKey: "pk",
      context,
    });
    expect(plain.MessageAttributes["x-payload-encoding"]).toBeUndefined();
    expect(plain).not.toHaveProperty("MessageGroupId");
  });
});

describe("Kinesis records", () => {
  it("the shard id and the default dedup key come from eventID and the ARN", () => {
    expect(shardIdOf("shardId-000000000006:4959")).toBe("shardId-000000000006");
    expect(shardIdOf("nocolon")).toBeUndefined();
    expect(kinesisBrokerId(kinesisRecord("e30="))).toBe(`${STREAM}/shardId-000000000003/100`);
  });
  it("data must be base64", () => {
    expect(kinesisData("aGk=").toString()).toBe("hi");
    expect(() => kinesisData("not base64!")).toThrow(/not valid base64/);
  });
  it("an event of another shape is refused", () => {
    expect(() => assertKinesisEvent({ Records: [{ eventSource: "aws:sqs" }] })).toThrow(
      /not a Kinesis record/,
    );
    expect(() => assertKinesisEvent({ Records: [kinesisRecord("e30=")] })).not.toThrow();
  });
  it("reads JSON with a schema and a business key; bad input is a typed permanent error", async () => {
    const schema = z.object({ id: z.string() });
    const e = await toKinesisEnvelope(kinesisRecord(Buffer.from('{"id":"c-1"}')), {
      schema,
      key: (b) => b.id,
    });
    expect(e).toMatchObject({ id: "c-1", idSource: "business", body: { id: "c-1" }, key: "pk" });
    await expect(toKinesisEnvelope(kinesisRecord(Buffer.from("{x")), {})).rejects.toMatchObject({
      name: "InvalidJsonError",
      kind: "permanent",
    });
    await expect(
      toKinesisEnvelope(kinesisRecord(Buffer.from([0xff])), { parse: "text" }),
    ).rejects.toMatchObject({
      name: "MalformedRecordError",
    });
    await expect(
      toKinesisEnvelope(kinesisRecord(Buffer.from('{"id":""}')), { key: (b: { id: string }) => b.id }),
    ).rejects.toMatchObject({ name: "MissingIdError" });
  });
  it("reads Avro framed by the Glue SerDe through the Kafka side's decoders", async () => {
    const Click = { type: "record", name: "StreamClick", fields: [{ name: "id", type: "string" }] };
    const type = avsc.Type.forSchema(Click as avsc.Schema);
    const id = "0b0c5a2e-8b1f-4b8e-9d43-6f1a2b3c4d5e";
    const registry = {
      kind: "glue",
      fetchSchema: async (schemaId: string) => ({
        id: schemaId,
        format: "AVRO",
        definition: JSON.stringify(Click),
      }),
      idFor: async () => id,
    } as unknown as SchemaRegistry;
    const framed = writeGlueFrame(id, type.toBuffer({ id: "c-9" }));
    const e = await toKinesisEnvelope(kinesisRecord(framed), { parse: avro({ registry }) });
    expect(e.body).toEqual({ id: "c-9" });
    expect(e.raw).toBe(framed.toString("base64"));
    expect(e.data).toEqual(framed);
  });
});

describe("DynamoDB Streams records", () => {
  const record = (
    over: Partial<DynamoDBRecord> & { dynamodb?: DynamoDBRecord["dynamodb"] },
  ): DynamoDBRecord => ({
    eventID: "e-1",
    eventName: "INSERT",
    eventSource: "aws:dynamodb",
    eventSourceARN: "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026",
    ...over,
    dynamodb: { SequenceNumber: "7", Keys: { pk: { S: "a" } }, ...over.dynamodb },
  });
  it("unmarshals binary (base64 in the event) to bytes and big numbers to BigInt", async () => {
    const e = await toDynamoDbStreamEnvelope(
      record({
        dynamodb: { NewImage: { pk: { S: "a" }, b: { B: "AQI=" }, n: { N: "123456789012345678901" } } },
      }),
      {},
    );
    expect(e.body).toEqual({ pk: "a", b: new Uint8Array([1, 2]), n: 123456789012345678901n });
    expect(e).toMatchObject({ id: "e-1", idSource: "broker", eventName: "INSERT", keys: { pk: "a" } });
  });
  it("the body is the keys when the view type carries no image (KEYS_ONLY)", async () => {
    const e = await toDynamoDbStreamEnvelope(record({ eventName: "REMOVE" }), {});
    expect(e.body).toEqual({ pk: "a" });
    expect(e.oldImage).toBeUndefined();
  });
  it("only a REMOVE by the TTL service is removedByTtl", () => {
    const ttl = { type: "Service", principalId: "dynamodb.amazonaws.com" };
    expect(removedByTtl(record({ eventName: "REMOVE", userIdentity: ttl }))).toBe(true);
    expect(removedByTtl(record({ eventName: "REMOVE" }))).toBe(false);
    expect(removedByTtl(record({ eventName: "MODIFY", userIdentity: ttl }))).toBe(false);
  });
  it("the item key is stable whatever the attribute order", () => {
    expect(itemKeyOf({ a: { S: "1" }, b: { N: "2" } })).toBe(itemKeyOf({ b: { N: "2" }, a: { S: "1" } }));
  });
});
