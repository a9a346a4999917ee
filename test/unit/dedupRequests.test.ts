import type { UpdateItemCommandInput } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import {
  type ClaimWrite,
  claimUpdate,
  releaseDelete,
  renewUpdate,
  routeUpdate,
} from "../../lib/dedup/dedupRequests.ts";

const claim: ClaimWrite = {
  tableName: "dedup",
  pk: "scope#key",
  token: "token-1",
  expiresAtMs: 31_000,
  nowMs: 1_000,
  windowSeconds: 60,
  payloadHash: undefined,
  delivery: undefined,
};
const lease = { tableName: "dedup", pk: "scope#key", token: "token-1" };

/** The `#name` and `:value` placeholders an expression uses. */
function placeholders(request: Pick<UpdateItemCommandInput, "UpdateExpression" | "ConditionExpression">) {
  const text = `${request.UpdateExpression ?? ""} ${request.ConditionExpression ?? ""}`;
  return {
    names: [...new Set(text.match(/#\w+/g))].sort(),
    values: [...new Set(text.match(/:\w+/g))].sort(),
  };
}

describe("dedup store requests", () => {
  it("define exactly the placeholders their expressions use (DynamoDB refuses an unused one)", () => {
    const requests = [
      ...[undefined, "hash"].flatMap((payloadHash) =>
        [undefined, "topic:0:7"].map((delivery) => claimUpdate({ ...claim, payloadHash, delivery })),
      ),
      routeUpdate({ ...lease, delivery: "topic:0:7", route: "retry", nowMs: 1_000, windowSeconds: 60 }),
      renewUpdate({ ...lease, expiresAtMs: 61_000 }),
      releaseDelete(lease),
    ];
    for (const request of requests) {
      const used = placeholders(request);
      expect(Object.keys(request.ExpressionAttributeNames ?? {}).sort()).toEqual(used.names);
      expect(Object.keys(request.ExpressionAttributeValues ?? {}).sort()).toEqual(used.values);
    }
  });

  it("wraps the claimable group in parentheses only when it has guards (DynamoDB refuses redundant ones)", () => {
    const free = "(#status = :inProgress AND #lease < :nowMs) OR #status = :routed";
    expect(claimUpdate(claim).ConditionExpression).toBe(
      `attribute_not_exists(#pk) OR #exp < :nowSec OR ${free}`,
    );
    expect(claimUpdate({ ...claim, payloadHash: "hash" }).ConditionExpression).toBe(
      `attribute_not_exists(#pk) OR #exp < :nowSec OR ((${free}) AND (attribute_not_exists(#hash) OR #hash = :hash))`,
    );
  });

  it("never lets a delivery take a live lease over, even its own (issue 34 item 10)", () => {
    const free = "(#status = :inProgress AND #lease < :nowMs) OR #status = :routed";
    expect(claimUpdate({ ...claim, delivery: "topic:0:7" }).ConditionExpression).toBe(
      `attribute_not_exists(#pk) OR #exp < :nowSec OR ((${free}) AND NOT contains(#routedBy, :delivery))`,
    );
  });
});
