/** Issue 14 item 7: the dedup scope a consumer uses by default is its stable name, handed to the code. */
import { Duration, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { ConsumerFunction, DedupTable, LAMBDA_ENV } from "reliable-consumers/cdk";
import { describe, it } from "vitest";
import { STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { testApp } from "./synthHelpers.ts";

describe("ConsumerFunction passes its consumer name to the code", () => {
  it("sets CONSUMER_NAME from consumerName (default: the construct id), not from the generated function name", () => {
    const stack = new Stack(testApp(), "S");
    new ConsumerFunction(stack, "PaymentConsumer", { entry: STUB_ENTRY });
    new ConsumerFunction(stack, "Other", { entry: STUB_ENTRY, consumerName: "orders" });
    const template = Template.fromStack(stack);
    for (const name of ["PaymentConsumer", "orders"]) {
      template.hasResourceProperties("AWS::Lambda::Function", {
        Environment: { Variables: Match.objectLike({ [LAMBDA_ENV.consumerName]: name }) },
      });
    }
  });
});

describe("issue 14 item 5: the dedup window the code writes is the one synth checks", () => {
  it("useDedupWindow(dedupTable) hands the table and its window to the function", () => {
    const stack = new Stack(testApp(), "S");
    const dedup = new DedupTable(stack, "Dedup", { window: Duration.days(20) });
    new ConsumerFunction(stack, "Payments", { entry: STUB_ENTRY }).useDedupWindow(dedup);
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          [LAMBDA_ENV.dedupWindowSeconds]: String(20 * 24 * 3600),
          [LAMBDA_ENV.dedupTableName]: Match.anyValue(),
        }),
      },
    });
  });
});
