/**
 * What the AWS gateway does to an SQS call besides asking IAM. On the way in: the quotas fauxqs
 * lets through (enforcement.ts), which refuse a whole call or fail single batch entries (answered
 * here and taken out of the call), and the queue URL back in the emulator's form. On the way out:
 * the receipts remembered (the 12 h visibility limit counts from them), the queue URLs renamed to
 * the gateway, and the entries failed here merged into the batch answer's `Failed`.
 */
import type { AnswerRewrite } from "../../enforcement/gatewayHttp.ts";
import type { ServiceError } from "../../enforcement/serviceError.ts";
import { type BatchEntryFailure, batchEntryFailures, sqsQuota } from "./enforcement.ts";
import { createQueueUrlMap, type QueueUrlMap, URL_ANSWERS } from "./queueUrls.ts";
import { createReceiptClock, type ReceiptClock } from "./receiptClock.ts";

type Body = Readonly<Record<string, unknown>>;

/** What becomes of an SQS request at the gateway. */
export type SqsScreen =
  /** It breaks a quota as a whole: SQS's error, nothing forwarded. */
  | { readonly kind: "refuse"; readonly error: ServiceError }
  /** Every entry of a batch failed here: the batch answer (JSON text), nothing forwarded. */
  | { readonly kind: "answer"; readonly text: string }
  /** Forward `body` (`json` serialised, less the entries in `failed`, which the answer must list). */
  | {
      readonly kind: "forward";
      readonly json: Body;
      readonly body: Buffer;
      readonly failed: readonly BatchEntryFailure[];
    };

/**
 * The quotas over one SQS request (`json` its parameters, `body` its bytes), at `now` (epoch ms),
 * counting visibility from `receivedAt`. Leaves `json` as it is.
 */
export function screenSqsRequest(
  operation: string,
  json: Body,
  body: Buffer,
  receivedAt: (handle: string) => number | undefined,
  now: number,
): SqsScreen {
  const quota = sqsQuota(operation, json, receivedAt, now);
  if (quota) return { kind: "refuse", error: quota };
  const failed = batchEntryFailures(operation, json, receivedAt, now);
  if (failed.length === 0) return { kind: "forward", json, body, failed };
  const ids = new Set(failed.map((f) => f.Id));
  const Entries = (json.Entries as Array<{ Id: string }>).filter((e) => !ids.has(e.Id));
  if (Entries.length === 0)
    return { kind: "answer", text: JSON.stringify({ Successful: [], Failed: failed }) };
  const rest = { ...json, Entries };
  return { kind: "forward", json: rest, body: Buffer.from(JSON.stringify(rest)), failed };
}

/**
 * How the answer to an SQS `operation` changes on its way back (`undefined`: it passes as it is):
 * ReceiveMessage's receipts are remembered, queue URLs renamed to the gateway, and the entries
 * failed at the gateway (`failed`) added to a successful batch answer's `Failed`.
 */
export function sqsAnswerRewrite(
  operation: string,
  failed: readonly BatchEntryFailure[],
  receipts: Pick<ReceiptClock, "remember">,
  urls: Pick<QueueUrlMap, "toGateway">,
): AnswerRewrite | undefined {
  if (!(URL_ANSWERS.has(operation) || operation === "ReceiveMessage" || failed.length > 0)) return undefined;
  return (text, status) => {
    let answer = text;
    if (operation === "ReceiveMessage") receipts.remember(answer);
    else if (URL_ANSWERS.has(operation)) answer = urls.toGateway(answer);
    if (failed.length && status === 200) {
      const merged = JSON.parse(answer) as { Failed?: unknown[] };
      merged.Failed = [...(merged.Failed ?? []), ...failed];
      answer = JSON.stringify(merged);
    }
    return answer;
  };
}

/** One gateway's SQS stages, with the receipts and queue URLs it has seen. */
export interface SqsGatewayStages {
  /**
   * The quotas over a request, then (JSON protocol only: `jsonProtocol`) its QueueUrl back in the
   * form `upstream` gave it.
   */
  screen(operation: string, json: Body, body: Buffer, upstream: string, jsonProtocol: boolean): SqsScreen;
  /** The rewrite of the answer to a forwarded request (`failed`: its entries failed at the gateway). */
  answer(operation: string, failed: readonly BatchEntryFailure[]): AnswerRewrite | undefined;
}

/**
 * The SQS stages of a gateway at `origin()` (read at each call: known once the gateway listens),
 * reading `now` (epoch ms) for the visibility quotas.
 */
export function sqsGatewayStages(now: () => number, origin: () => string): SqsGatewayStages {
  const receipts = createReceiptClock(now);
  const urls = createQueueUrlMap(origin);
  return {
    screen(operation, json, body, upstream, jsonProtocol) {
      const screened = screenSqsRequest(operation, json, body, receipts.receivedAt, now());
      if (screened.kind !== "forward" || !jsonProtocol) return screened;
      return { ...screened, body: urls.toUpstream(screened.json, screened.body, upstream) };
    },
    answer: (operation, failed) => sqsAnswerRewrite(operation, failed, receipts, urls),
  };
}
