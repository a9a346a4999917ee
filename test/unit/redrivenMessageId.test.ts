import type { SQSRecord } from "aws-lambda";
import { packAttributes, toSqsEnvelope } from "reliable-consumers/sqs";
import { describe, expect, it } from "vitest";
import { carriedMessageId } from "../../lib/sqs/attributePacking.ts";

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
