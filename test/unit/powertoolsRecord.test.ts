/**
 * Issue 33 item 7: the Powertools cut-over reads Powertools' records by the key Powertools itself
 * computes. The keys are checked against Powertools' own code (the devDependency, 2.35.0); no AWS
 * call is made (its persistence layer builds a client but sends nothing here).
 */
import { IdempotencyConfig } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import type { SQSRecord } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import {
  powertoolsDeepSort,
  powertoolsIdempotencyKey,
  powertoolsVerdict,
} from "../../lib/dedup/powertoolsRecord.ts";

const record = (messageId: string, body: unknown): SQSRecord => ({
  messageId,
  receiptHandle: "rh",
  body: JSON.stringify(body),
  attributes: {
    ApproximateReceiveCount: "1",
    SentTimestamp: "1",
    SenderId: "s",
    ApproximateFirstReceiveTimestamp: "1",
  },
  messageAttributes: {},
  md5OfBody: "",
  eventSource: "aws:sqs",
  eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders",
  awsRegion: "us-east-1",
});

/** The key Powertools' own persistence layer gives `event`, configured as `makeIdempotent` does. */
function powertoolsKey(
  event: unknown,
  config: ConstructorParameters<typeof IdempotencyConfig>[0],
  keyPrefix?: string,
): string {
  const layer = new DynamoDBPersistenceLayer({ tableName: "unused" });
  layer.configure({ config: new IdempotencyConfig(config), ...(keyPrefix ? { keyPrefix } : {}) });
  // Protected in its types, public at run time: the exact function Powertools stores records under.
  return (layer as unknown as { getHashedIdempotencyKey(data: unknown): string }).getHashedIdempotencyKey(
    event,
  );
}

const savedName = process.env.AWS_LAMBDA_FUNCTION_NAME;
afterEach(() => {
  if (savedName === undefined) delete process.env.AWS_LAMBDA_FUNCTION_NAME;
  else process.env.AWS_LAMBDA_FUNCTION_NAME = savedName;
});

describe("powertoolsIdempotencyKey is the key Powertools stores", () => {
  it("keyed on messageId, prefixed with the function name (AWS_LAMBDA_FUNCTION_NAME)", () => {
    process.env.AWS_LAMBDA_FUNCTION_NAME = "orders-v1";
    const r = record("5f1c-0001", { orderId: "o-1" });
    const theirs = powertoolsKey(r, { eventKeyJmesPath: "messageId" });
    expect(theirs.startsWith("orders-v1#")).toBe(true);
    expect(powertoolsIdempotencyKey("orders-v1", r.messageId)).toBe(theirs);
  });

  it("keyed on a body field (powertools_json), string and number values", () => {
    process.env.AWS_LAMBDA_FUNCTION_NAME = "orders-v1";
    for (const orderId of ["o-1", 42, "ÖRDER-ß"]) {
      const r = record("m", { orderId, amountCents: 100 });
      expect(powertoolsIdempotencyKey("orders-v1", orderId)).toBe(
        powertoolsKey(r, { eventKeyJmesPath: "powertools_json(body).orderId" }),
      );
    }
  });

  it("keyed on several fields (a multiselect hash), sorted as Powertools sorts them", () => {
    process.env.AWS_LAMBDA_FUNCTION_NAME = "orders-v1";
    const body = { Zeta: 1, alpha: { b: [3, { Y: 1, x: 2 }], A: null }, orderId: "o-9" };
    const r = record("m", body);
    expect(powertoolsIdempotencyKey("orders-v1", body)).toBe(
      powertoolsKey(r, { eventKeyJmesPath: "powertools_json(body)" }),
    );
    expect(JSON.stringify(powertoolsDeepSort(body))).toBe(
      '{"alpha":{"A":null,"b":[3,{"x":2,"Y":1}]},"orderId":"o-9","Zeta":1}',
    );
  });

  it("uses makeIdempotent's keyPrefix when given, and the hash function configured", () => {
    process.env.AWS_LAMBDA_FUNCTION_NAME = "ignored";
    const r = record("m-2", {});
    expect(powertoolsIdempotencyKey("orders", "m-2", "sha256")).toBe(
      powertoolsKey(r, { eventKeyJmesPath: "messageId", hashFunction: "sha256" }, " orders "),
    );
  });
});

describe("powertoolsVerdict reads a record as Powertools' own claim would", () => {
  const now = 1_800_000_000_000;
  const sec = now / 1000;

  it("no record, or an expired one, is free; a COMPLETED one within its window is done", () => {
    expect(powertoolsVerdict(undefined, now)).toEqual({ kind: "free" });
    const base = { inProgressUntilMs: undefined };
    expect(powertoolsVerdict({ ...base, status: "COMPLETED", expiresAtSec: sec + 60 }, now)).toEqual({
      kind: "completed",
    });
    expect(powertoolsVerdict({ ...base, status: "COMPLETED", expiresAtSec: sec - 1 }, now)).toEqual({
      kind: "free",
    });
  });

  it("an INPROGRESS lock holds until in_progress_expiration, and is free after it", () => {
    const lock = { status: "INPROGRESS", expiresAtSec: sec + 3600 };
    expect(powertoolsVerdict({ ...lock, inProgressUntilMs: now + 5000 }, now)).toEqual({
      kind: "in-progress",
      untilMs: now + 5000,
    });
    expect(powertoolsVerdict({ ...lock, inProgressUntilMs: now - 1 }, now)).toEqual({ kind: "free" });
  });

  it("a lock with no in_progress_expiration (no Lambda context) holds until the record expires", () => {
    const lock = { status: "INPROGRESS", inProgressUntilMs: undefined };
    expect(powertoolsVerdict({ ...lock, expiresAtSec: sec + 3600 }, now)).toEqual({
      kind: "in-progress",
      untilMs: now + 3_600_000,
    });
    expect(powertoolsVerdict({ ...lock, expiresAtSec: sec - 1 }, now)).toEqual({ kind: "free" });
  });
});
