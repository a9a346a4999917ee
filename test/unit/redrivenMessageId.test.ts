import type { SQSRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { carriedMessageId, packAttributes, withMessageId } from "../../lib/sqs/attributePacking.ts";
import { toSqsEnvelope } from "../../lib/sqs/sqsEnvelope.ts";

/** A message as the consumer parked it, moved back as is (SQS's StartMessageMoveTask keeps its attributes). */
function movedBack(user: Record<string, string>, context: Record<string, string>): SQSRecord {
  const packed = packAttributes(
    Object.fromEntries(Object.entries(user).map(([k, v]) => [k, { DataType: "String", StringValue: v }])),
    context,
  );
  return {
    messageId: "new-id-after-the-move",
    receiptHandle: "rh",
    body: "{}",
    attributes: { ApproximateReceiveCount: "1" } as SQSRecord["attributes"],
    messageAttributes: Object.fromEntries(
      Object.entries(packed).map(([k, a]) => [
        k,
        { dataType: a.DataType, stringValue: a.StringValue } as SQSRecord["messageAttributes"][string],
      ]),
    ),
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders",
    awsRegion: "us-east-1",
  };
}

describe("a message redriven from a DLQ keeps the id it was deduplicated under", () => {
  const context = { "x-message-id": "original-id", "x-last-error": "TransientError: timeout" };

  it("reads x-message-id from the packed failure context, side by side or folded", async () => {
    const side = await toSqsEnvelope(movedBack({ tenant: "t" }, context), {});
    expect({ id: side.id, idSource: side.idSource }).toEqual({ id: "original-id", idSource: "producer" });
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, `v${i}`]));
    const folded = await toSqsEnvelope(movedBack(ten, context), {});
    expect(folded.id).toBe("original-id");
  });

  it("prefers the producer's message-id, and leaves a message with no context alone", async () => {
    expect((await toSqsEnvelope(movedBack({ "message-id": "producer-id" }, context), {})).id).toBe(
      "producer-id",
    );
    const plain = movedBack({}, {});
    delete (plain.messageAttributes as Record<string, unknown>)["x-failure-context"];
    expect((await toSqsEnvelope(plain, {})).id).toBe("new-id-after-the-move");
  });

  it("carriedMessageId: own attribute first, then the context; garbage is ignored", () => {
    expect(carriedMessageId({ "x-message-id": "own", "x-failure-context": '{"x-message-id":"ctx"}' })).toBe(
      "own",
    );
    expect(carriedMessageId({ "x-failure-context": '{"x-message-id":"ctx"}' })).toBe("ctx");
    expect(
      carriedMessageId({ "x-folded-attributes": '{"attributes":{},"context":{"x-message-id":"f"}}' }),
    ).toBe("f");
    expect(carriedMessageId({ "x-failure-context": "not json" })).toBeUndefined();
    expect(carriedMessageId({})).toBeUndefined();
  });
});

describe("issue 34 item 2: withMessageId, the attributes a copy needs to dedup under its record's id", () => {
  const attr = (v: string) => ({ DataType: "String", StringValue: v });
  const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, attr(`v${i}`)]));

  it("adds x-message-id beside the user's attributes, or folds it with them when they fill 10", () => {
    expect(withMessageId({ tenant: attr("t") }, "id-1")).toEqual({
      tenant: attr("t"),
      "x-message-id": attr("id-1"),
    });
    const folded = withMessageId(ten, "id-1");
    expect(Object.keys(folded)).toEqual(["x-folded-attributes"]);
    const strings = Object.fromEntries(Object.entries(folded).map(([k, a]) => [k, a.StringValue]));
    expect(carriedMessageId(strings)).toBe("id-1");
  });

  it("leaves attributes that already name the id alone", () => {
    expect(withMessageId({ "message-id": attr("p") }, "p")).toEqual({ "message-id": attr("p") });
    const { a9: _, ...nine } = ten;
    expect(withMessageId({ ...nine, "x-message-id": attr("x") }, "x")).toEqual({
      ...nine,
      "x-message-id": attr("x"),
    });
  });

  it("folds what is past SQS's 10 (a folded record's attributes, unfolded), the id with them", async () => {
    const folded = withMessageId({ ...ten, "x-message-id": attr("x") }, "x");
    expect(Object.keys(folded)).toEqual(["x-folded-attributes"]);
    const record = movedBack({}, {});
    record.messageAttributes = {
      "x-folded-attributes": {
        dataType: "String",
        stringValue: folded["x-folded-attributes"]!.StringValue,
      } as SQSRecord["messageAttributes"][string],
    };
    const envelope = await toSqsEnvelope(record, {});
    expect(envelope.id).toBe("x");
    expect(envelope.headers.a9).toBe("v9");
  });
});
