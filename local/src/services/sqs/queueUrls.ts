/**
 * Queue URLs across the gateway. Answers name the gateway, whatever host the emulator put in them
 * (fauxqs names `sqs.<region>.localhost`, which does not resolve; LocalStack its own address, which
 * a stock client would then reach around the checks); requests go back to the emulator with the
 * URL it gave, since LocalStack reads its host.
 */

/** SQS calls whose answers carry queue URLs, rewritten to name the gateway. */
export const URL_ANSWERS: ReadonlySet<string> = new Set([
  "CreateQueue",
  "GetQueueUrl",
  "ListQueues",
  "ListDeadLetterSourceQueues",
]);

/** A queue's ARN from its URL or its name, in one region and (by default) one account. */
export interface QueueArns {
  /** `/<account>/<name>` (fauxqs, SQS) or `/queue/<region>/<account>/<name>` (LocalStack's paths). */
  queueArnOfUrl(url: string): string;
  queueArnOfName(name: string, account?: string): string;
}

/** The queue ARNs of `region`; a URL or name without an account is in `accountId`. */
export function queueArns(region: string, accountId: string): QueueArns {
  return {
    queueArnOfUrl(url) {
      const parts = new URL(url).pathname.split("/").filter(Boolean);
      const [account = accountId, name = ""] = parts.slice(-2);
      return `arn:aws:sqs:${region}:${account}:${name}`;
    },
    queueArnOfName: (name, account = accountId) => `arn:aws:sqs:${region}:${account}:${name}`,
  };
}

/** The gateway's queue URLs and, for the way back, the emulator's behind them. */
export interface QueueUrlMap {
  /**
   * The JSON request with its QueueUrl back in the emulator's own form, or `body` as it is when its
   * QueueUrl does not name the gateway.
   */
  toUpstream(json: Readonly<Record<string, unknown>>, body: Buffer, upstream: string): Buffer;
  /** An answer's queue URLs renamed to the gateway; an answer that is not JSON (an error page) as it is. */
  toGateway(answer: string): string;
}

/**
 * An empty map for a gateway at `origin()` (`http://127.0.0.1:<port>`, read at each call: the
 * gateway knows its port only once it listens).
 */
export function createQueueUrlMap(origin: () => string): QueueUrlMap {
  /** Queue path (`/<account>/<name>`) → the URL the emulator gave it. */
  const upstreamUrls = new Map<string, string>();
  const local = (url: unknown) => {
    if (typeof url !== "string" || !/^https?:\/\//.test(url)) return url;
    const path = new URL(url).pathname;
    upstreamUrls.set(path, url);
    return `${origin()}${path}`;
  };
  return {
    toUpstream(json, body, upstream) {
      if (typeof json.QueueUrl !== "string" || !json.QueueUrl.startsWith(origin())) return body;
      const path = new URL(json.QueueUrl).pathname;
      const QueueUrl = upstreamUrls.get(path) ?? new URL(path, upstream).toString();
      return Buffer.from(JSON.stringify({ ...json, QueueUrl }));
    },
    toGateway(text) {
      let answer: { QueueUrl?: unknown; QueueUrls?: unknown; queueUrls?: unknown };
      try {
        answer = JSON.parse(text) as typeof answer;
      } catch {
        return text; // an error page: nothing to rewrite
      }
      if (answer.QueueUrl !== undefined) answer.QueueUrl = local(answer.QueueUrl);
      if (Array.isArray(answer.QueueUrls)) answer.QueueUrls = answer.QueueUrls.map(local);
      // ListDeadLetterSourceQueues spells it in lower case.
      if (Array.isArray(answer.queueUrls)) answer.queueUrls = answer.queueUrls.map(local);
      return JSON.stringify(answer);
    },
  };
}
