import { Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { ConsumerFunction, OutboxTable } from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";
import { STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { testApp } from "./synthHelpers.ts";

describe("the outbox relay's stream mapping", () => {
  const relay = (stack: Stack) =>
    new ConsumerFunction(stack, "Relay", { entry: STUB_ENTRY, timeout: Duration.minutes(1) });

  it("fails synth for a parallelization factor above 1, saying why", () => {
    const stack = new Stack(testApp(), "S");
    const table = new OutboxTable(stack, "App");
    const fn = relay(stack);
    let error: unknown;
    try {
      table.addRelay(fn, { parallelizationFactor: 2 });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "RelayParallelizationBreaksOrder", path: "S/Relay" });
    expect(String(error)).toMatch(
      /parallelizationFactor 2 would break order per aggregate\. .*only per item, and each outbox event is an item of its own/,
    );
  });

  it("reads each shard one batch at a time by default", () => {
    const stack = new Stack(testApp(), "S");
    new OutboxTable(stack, "App").addRelay(relay(stack));
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      ParallelizationFactor: 1,
    });
  });
});
