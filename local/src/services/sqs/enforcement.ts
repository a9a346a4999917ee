/**
 * An SQS JSON-protocol request, as IAM sees it (action and queue ARN per the service authorization
 * reference: the batch calls authorize as their single forms) and as SQS's quotas see it. Only the
 * quotas fauxqs lets through are checked here; the rest it answers itself, in the same words.
 */
import { FIFO_ID_PATTERN, SQS_LIMITS } from "reliable-consumers/sqs";
import { type ServiceError, sqsInvalidParameter } from "../../enforcement/serviceError.ts";
import type { AuthzRequest } from "../iam/iamEvaluator.ts";

/** The IAM action of each operation whose name is not its own action. */
const ACTION_OF: Readonly<Record<string, string>> = {
  SendMessageBatch: "SendMessage",
  DeleteMessageBatch: "DeleteMessage",
  ChangeMessageVisibilityBatch: "ChangeMessageVisibility",
};

export interface SqsArns {
  /** `http://host/<account>/<name>` → `arn:aws:sqs:<region>:<account>:<name>`. */
  queueArnOfUrl(url: string): string;
  queueArnOfName(name: string, account?: string): string;
  /** The customer-managed key of a queue, if any: SQS uses it with the caller's permissions. */
  keyOf(queueArn: string): string | undefined;
}

type Body = Record<string, unknown>;

/** The IAM questions one SQS request asks. */
export function sqsAuthz(operation: string, body: Body, arns: SqsArns, region: string): AuthzRequest[] {
  const action = `sqs:${ACTION_OF[operation] ?? operation}`;
  let resource: string;
  if (typeof body.QueueUrl === "string") resource = arns.queueArnOfUrl(body.QueueUrl);
  else if (typeof body.QueueName === "string")
    resource = arns.queueArnOfName(
      body.QueueName,
      typeof body.QueueOwnerAWSAccountId === "string" ? body.QueueOwnerAWSAccountId : undefined,
    );
  else if (typeof body.SourceArn === "string") resource = body.SourceArn;
  else if (typeof body.TaskHandle === "string") resource = "*";
  else resource = "*";
  const out: AuthzRequest[] = [{ action, resource }];
  const key = resource === "*" ? undefined : arns.keyOf(resource);
  if (key) {
    // SQS calls KMS as the caller: producers need GenerateDataKey and Decrypt, consumers Decrypt.
    const context = { "kms:ViaService": `sqs.${region}.amazonaws.com` };
    if (action === "sqs:SendMessage") out.push({ action: "kms:GenerateDataKey", resource: key, context });
    if (action === "sqs:SendMessage" || action === "sqs:ReceiveMessage")
      out.push({ action: "kms:Decrypt", resource: key, context });
  }
  return out;
}

interface MessageInput {
  readonly MessageAttributes?: Record<string, unknown>;
  readonly DelaySeconds?: number;
  readonly MessageGroupId?: unknown;
  readonly MessageDeduplicationId?: unknown;
}

/**
 * A MessageGroupId or MessageDeduplicationId SQS refuses (more than 128 characters, or one outside
 * alphanumerics and punctuation: `José García`), in SQS's words. fauxqs stores any string.
 */
function fifoIdQuota(m: MessageInput): ServiceError | undefined {
  for (const parameter of ["MessageGroupId", "MessageDeduplicationId"] as const) {
    const value = m[parameter];
    if (typeof value === "string" && !FIFO_ID_PATTERN.test(value))
      return sqsInvalidParameter(
        `Value ${value} for parameter ${parameter} is invalid. Reason: ${parameter} can only include alphanumeric and punctuation characters. 1 to ${SQS_LIMITS.maxFifoIdLength} in length.`,
      );
  }
  return undefined;
}

function messageQuota(m: MessageInput, where: string): ServiceError | undefined {
  const attributes = Object.keys(m.MessageAttributes ?? {}).length;
  if (attributes > SQS_LIMITS.maxAttributes)
    return sqsInvalidParameter(
      `Number of message attributes [${attributes}] exceeds the allowed maximum [${SQS_LIMITS.maxAttributes}]${where}.`,
    );
  if (m.DelaySeconds !== undefined && (m.DelaySeconds < 0 || m.DelaySeconds > SQS_LIMITS.maxDelaySeconds))
    return sqsInvalidParameter(
      `Value ${m.DelaySeconds} for parameter DelaySeconds is invalid. Reason: must be between 0 and ${SQS_LIMITS.maxDelaySeconds}${where}.`,
    );
  return undefined;
}

/**
 * The total visibility of a message, counted from its receive, may not pass 12 h. The gateway
 * remembers when each receipt handle was handed out (`receivedAt`), as SQS does.
 */
function visibilityQuota(
  handle: unknown,
  seconds: unknown,
  receivedAt: (handle: string) => number | undefined,
  now: number,
): ServiceError | undefined {
  if (typeof handle !== "string" || typeof seconds !== "number") return undefined;
  const since = receivedAt(handle);
  if (since === undefined) return undefined;
  const total = Math.ceil((now - since) / 1000) + seconds;
  if (total > SQS_LIMITS.maxVisibilitySeconds)
    return sqsInvalidParameter(
      `Value ${seconds} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [${SQS_LIMITS.maxVisibilitySeconds} seconds].`,
    );
  return undefined;
}

/** The first SQS quota this request breaks that fauxqs would let through, if any. */
export function sqsQuota(
  operation: string,
  body: Body,
  receivedAt: (handle: string) => number | undefined,
  now: number,
): ServiceError | undefined {
  switch (operation) {
    case "SendMessage":
      return messageQuota(body as MessageInput, "") ?? fifoIdQuota(body as MessageInput);
    case "SendMessageBatch": {
      for (const [i, entry] of ((body.Entries as MessageInput[] | undefined) ?? []).entries()) {
        const error = messageQuota(entry, ` (entry ${i + 1})`);
        if (error) return error;
      }
      return undefined;
    }
    case "ChangeMessageVisibility":
      return visibilityQuota(body.ReceiptHandle, body.VisibilityTimeout, receivedAt, now);
    default:
      return undefined;
  }
}

/** A batch entry SQS fails on its own, as the batch answer's `Failed` lists it. */
export interface BatchEntryFailure {
  readonly Id: string;
  readonly SenderFault: true;
  readonly Code: string;
  readonly Message: string;
}

/**
 * The entries of a batch call that SQS fails one by one while the others go on: the gateway answers
 * them as failed and takes them out of the call (empty when every entry may go on).
 * - ChangeMessageVisibilityBatch: an entry past 12 h of visibility.
 * - SendMessageBatch: an entry whose MessageGroupId or MessageDeduplicationId SQS refuses. SQS
 *   reports an entry's invalid parameter in `Failed` with `SenderFault` and `InvalidParameterValue`
 *   (the batch answer's shape, SendMessageBatch API reference; LocalStack does the same).
 */
export function batchEntryFailures(
  operation: string,
  body: Body,
  receivedAt: (handle: string) => number | undefined,
  now: number,
): BatchEntryFailure[] {
  const check: ((e: Record<string, unknown>) => ServiceError | undefined) | undefined =
    operation === "ChangeMessageVisibilityBatch"
      ? (e) => visibilityQuota(e.ReceiptHandle, e.VisibilityTimeout, receivedAt, now)
      : operation === "SendMessageBatch"
        ? (e) => fifoIdQuota(e as MessageInput)
        : undefined;
  if (!check) return [];
  const failed: BatchEntryFailure[] = [];
  for (const e of (body.Entries as Array<Record<string, unknown>> | undefined) ?? []) {
    const error = check(e);
    if (error) failed.push({ Id: String(e.Id), SenderFault: true, Code: error.code, Message: error.message });
  }
  return failed;
}
