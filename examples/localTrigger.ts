// The local runtime guide's test helper (docs/local.md includes the region);
// test/integration/examples.test.ts uses it to run the SQS quickstart.
// #region invoke
import { createSqsClient } from "reliable-consumers/sqs";
import { type InvocationResult, invokeFromQueue } from "reliable-consumers-local";
import { handler } from "./sqsQuickstart.ts";

/** Lambda's SQS trigger, once: one receive, one invocation, the partial batch response applied. */
export function runQuickstartOnce(queueUrl: string, queueArn: string): Promise<InvocationResult> {
  return invokeFromQueue(createSqsClient(), handler, { queueUrl, queueArn, functionName: "quickstart" });
}
// #endregion invoke
