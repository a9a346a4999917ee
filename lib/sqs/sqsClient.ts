import { SQSClient, type SQSClientConfig } from "@aws-sdk/client-sqs";

/**
 * An SQSClient that honours AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL for every call.
 * The SDK otherwise sends each call to the host inside its QueueUrl, and emulators (fauxqs,
 * LocalStack) hand out URLs such as `sqs.us-east-1.localhost` that do not resolve. In AWS the
 * variables are unset and this is a plain client.
 */
export function createSqsClient(config: SQSClientConfig = {}): SQSClient {
  const endpoint = process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL;
  return new SQSClient({ ...(endpoint ? { endpoint } : {}), ...config });
}
