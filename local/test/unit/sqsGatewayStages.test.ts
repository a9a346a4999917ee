import { describe, expect, it } from "vitest";
import {
  screenSqsRequest,
  sqsAnswerRewrite,
  sqsGatewayStages,
} from "../../src/services/sqs/gatewayStages.ts";
import { createQueueUrlMap, queueArns } from "../../src/services/sqs/queueUrls.ts";
import { createReceiptClock } from "../../src/services/sqs/receiptClock.ts";

const T0 = Date.parse("2026-12-01T00:00:00Z");
const never = () => undefined;
const bytes = (json: unknown) => Buffer.from(JSON.stringify(json));
const GATEWAY = "http://127.0.0.1:4000";
const EMULATOR_URL = "http://sqs.us-east-1.localhost:3000/000000000000/q";

describe("the gateway's SQS stages, without an emulator (sqs/gatewayStages.ts)", () => {
  it("refuses a whole call that breaks a quota, and leaves a call within them as it is", () => {
    const attributes = Object.fromEntries(
      Array.from({ length: 11 }, (_, i) => [`a${i}`, { DataType: "String", StringValue: "v" }]),
    );
    const over = { QueueUrl: "u", MessageBody: "x", MessageAttributes: attributes };
    expect(screenSqsRequest("SendMessage", over, bytes(over), never, T0)).toMatchObject({
      kind: "refuse",
      error: { code: "InvalidParameterValue" },
    });
    const ok = { QueueUrl: "u", MessageBody: "x" };
    const body = bytes(ok);
    expect(screenSqsRequest("SendMessage", ok, body, never, T0)).toEqual({
      kind: "forward",
      json: ok,
      body,
      failed: [],
    });
  });

  it("fails a batch entry SQS fails alone, forwards the others, and answers itself when none is left", () => {
    const entries = [
      { Id: "bad", MessageBody: "x", MessageGroupId: "José García" },
      { Id: "good", MessageBody: "y", MessageGroupId: "g" },
    ];
    const json = { QueueUrl: "u", Entries: entries };
    const screened = screenSqsRequest("SendMessageBatch", json, bytes(json), never, T0);
    expect(screened.kind).toBe("forward");
    if (screened.kind !== "forward") return;
    expect(screened.failed.map((f) => [f.Id, f.Code, f.SenderFault])).toEqual([
      ["bad", "InvalidParameterValue", true],
    ]);
    expect(JSON.parse(screened.body.toString("utf8"))).toEqual({ QueueUrl: "u", Entries: [entries[1]] });
    expect(json.Entries).toHaveLength(2); // the request's own parameters are left as they were

    const onlyBad = { QueueUrl: "u", Entries: [entries[0]] };
    const answered = screenSqsRequest("SendMessageBatch", onlyBad, bytes(onlyBad), never, T0);
    expect(answered.kind).toBe("answer");
    if (answered.kind !== "answer") return;
    expect(JSON.parse(answered.text)).toMatchObject({ Successful: [], Failed: [{ Id: "bad" }] });
  });

  it("counts visibility from the receive it remembered: past 12 h an entry fails, a whole call is refused", () => {
    const receipts = createReceiptClock(() => T0);
    receipts.remember(JSON.stringify({ Messages: [{ ReceiptHandle: "h1" }] }));
    expect(receipts.receivedAt("h1")).toBe(T0);
    const later = T0 + 43_000_000;
    const single = { QueueUrl: "u", ReceiptHandle: "h1", VisibilityTimeout: 300 };
    expect(
      screenSqsRequest("ChangeMessageVisibility", single, bytes(single), receipts.receivedAt, later).kind,
    ).toBe("refuse");
    expect(screenSqsRequest("ChangeMessageVisibility", single, bytes(single), never, later).kind).toBe(
      "forward",
    );
  });

  it("merges the entries failed here into a successful batch answer only", () => {
    const failed = [{ Id: "bad", SenderFault: true, Code: "InvalidParameterValue", Message: "m" }] as const;
    const rewrite = sqsAnswerRewrite("SendMessageBatch", failed, createReceiptClock(Date.now), {
      toGateway: (t) => t,
    });
    const answer = JSON.stringify({ Successful: [{ Id: "good" }] });
    expect(JSON.parse(rewrite!(answer, 200))).toEqual({ Successful: [{ Id: "good" }], Failed: failed });
    expect(rewrite!(answer, 400)).toBe(answer);
    expect(sqsAnswerRewrite("SendMessage", [], createReceiptClock(Date.now), { toGateway: (t) => t })).toBe(
      undefined,
    );
  });

  it("names the gateway in queue URLs it hands out, and the emulator's URL on the way back", () => {
    const urls = createQueueUrlMap(() => GATEWAY);
    const answer = urls.toGateway(JSON.stringify({ QueueUrl: EMULATOR_URL }));
    expect(JSON.parse(answer)).toEqual({ QueueUrl: `${GATEWAY}/000000000000/q` });
    expect(urls.toGateway("<html>oops</html>")).toBe("<html>oops</html>");
    const request = { QueueUrl: `${GATEWAY}/000000000000/q`, MessageBody: "x" };
    expect(
      JSON.parse(urls.toUpstream(request, bytes(request), "http://elsewhere:1").toString("utf8")),
    ).toEqual({
      QueueUrl: EMULATOR_URL,
      MessageBody: "x",
    });
    // A queue the gateway never named: its path on the emulator.
    const unseen = { QueueUrl: `${GATEWAY}/000000000000/other` };
    expect(JSON.parse(urls.toUpstream(unseen, bytes(unseen), "http://emu:9").toString("utf8"))).toEqual({
      QueueUrl: "http://emu:9/000000000000/other",
    });
  });

  it("puts the queue URL back only for the JSON protocol, after the quotas", () => {
    const stages = sqsGatewayStages(
      () => T0,
      () => GATEWAY,
    );
    const request = { QueueUrl: `${GATEWAY}/000000000000/q`, MessageBody: "x" };
    const json = stages.screen("SendMessage", request, bytes(request), "http://emu:9", true);
    const query = stages.screen("SendMessage", request, bytes(request), "http://emu:9", false);
    expect(json.kind === "forward" && JSON.parse(json.body.toString("utf8")).QueueUrl).toBe(
      "http://emu:9/000000000000/q",
    );
    expect(query.kind === "forward" && JSON.parse(query.body.toString("utf8")).QueueUrl).toBe(
      request.QueueUrl,
    );
  });

  it("knows a queue's ARN by URL (fauxqs's and LocalStack's paths) or by name", () => {
    const arns = queueArns("eu-west-1", "111111111111");
    expect(arns.queueArnOfUrl("http://h/222222222222/q")).toBe("arn:aws:sqs:eu-west-1:222222222222:q");
    expect(arns.queueArnOfUrl("http://h/queue/eu-west-1/222222222222/q")).toBe(
      "arn:aws:sqs:eu-west-1:222222222222:q",
    );
    expect(arns.queueArnOfName("q")).toBe("arn:aws:sqs:eu-west-1:111111111111:q");
  });
});
