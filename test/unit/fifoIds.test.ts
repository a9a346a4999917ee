import { describe, expect, it } from "vitest";
import { toFifoId } from "../../lib/sqs/fifoIds.ts";
import { FIFO_ID_PATTERN, SQS_LIMITS } from "../../lib/sqs/sqsLimits.ts";

describe("issue 34 item 3: toFifoId, any string as a MessageGroupId SQS accepts", () => {
  const refused = ["José García", "a".repeat(200), "", "two words", "🎉", "tab\there", "a~b"];

  it("keeps an id SQS accepts as it is, unless it has the mark `~`", () => {
    for (const id of [
      "order-7",
      "tenant#42:order/7",
      "0190f4c2-6a8e-7cc1-b3a4-9d0e1f2a3b4c",
      "x".repeat(128),
    ])
      expect(toFifoId(id)).toBe(id);
  });

  it("maps every other id to a valid one: a readable prefix, `~` and a 128-bit hash, at most 128 characters", () => {
    for (const id of refused) {
      const mapped = toFifoId(id);
      expect(mapped).toMatch(FIFO_ID_PATTERN);
      expect(mapped.length).toBeLessThanOrEqual(SQS_LIMITS.maxFifoIdLength);
      expect(mapped).toMatch(/~[0-9a-f]{32}$/);
    }
    expect(toFifoId("José García")).toMatch(/^Jose_Garcia~[0-9a-f]{32}$/);
    expect(toFifoId("a".repeat(200))).toBe(`${"a".repeat(95)}~${toFifoId("a".repeat(200)).slice(-32)}`);
  });

  it("is stable, and keeps apart ids that differ only past the cut or in a refused character", () => {
    expect(toFifoId("José García")).toBe(toFifoId("José García"));
    const distinct = [
      "José García",
      "Jose García",
      "José_García",
      "José  García",
      `${"a".repeat(200)}1`,
      `${"a".repeat(200)}2`,
      ...refused,
    ];
    expect(new Set(distinct.map(toFifoId)).size).toBe(new Set(distinct).size);
  });

  it("never gives a kept id to a mapped one: a valid id that looks like a mapped one is mapped again", () => {
    const mapped = toFifoId("José García");
    // An aggregate whose id is literally that mapped string: kept as is it would share the group.
    expect(toFifoId(mapped)).not.toBe(mapped);
    expect(toFifoId(mapped)).toMatch(FIFO_ID_PATTERN);
  });
});
