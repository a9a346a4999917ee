import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";

/** A Lambda-like context whose getRemainingTimeInMillis counts down from `timeoutMs`. */
export function lambdaContext(functionName: string, timeoutMs: number, memoryMb = 1024): Context {
  const deadline = Date.now() + timeoutMs;
  const requestId = randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION ?? "us-east-1"}:000000000000:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${requestId}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
