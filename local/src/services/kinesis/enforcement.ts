/**
 * A Kinesis JSON-protocol request (`X-Amz-Target: Kinesis_20131202.<Operation>`), as IAM sees it:
 * the action is `kinesis:<Operation>` and the resource the stream's ARN, or the consumer's for the
 * consumer calls (Service Authorization Reference, "Actions defined by Amazon Kinesis Data
 * Streams"). GetRecords names no stream, only an iterator, which kinesis-mock encrypts: the gateway
 * remembers which stream each iterator it handed out reads (`IteratorStreams`).
 * An encrypted stream's key is used with the caller's permissions ("Permissions to use
 * user-generated KMS keys", Kinesis Developer Guide): producers need `kms:GenerateDataKey`,
 * consumers `kms:Decrypt`.
 */
import type { AuthzRequest } from "../iam/iamEvaluator.ts";

type Body = Record<string, unknown>;

/** How the Kinesis questions name streams and keys. */
export interface KinesisArns {
  streamArnOfName(name: string): string;
  /** The stream an iterator the gateway handed out reads; `undefined` for one it did not. */
  streamOfIterator(iterator: string): string | undefined;
  /** The customer-managed KMS key of a stream, if any. */
  keyOf(streamArn: string): string | undefined;
}

/** Operations that name a consumer (`ConsumerARN`) as their resource. */
const CONSUMER_OPERATIONS = new Set([
  "SubscribeToShard",
  "DescribeStreamConsumer",
  "DeregisterStreamConsumer",
]);
/** Operations that take no resource. */
const ACCOUNT_OPERATIONS = new Set(["ListStreams", "DescribeLimits", "DescribeAccountSettings"]);
const PRODUCER_OPERATIONS = new Set(["PutRecord", "PutRecords"]);
const CONSUMER_READS = new Set(["GetRecords", "SubscribeToShard"]);

const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The consumer ARN's stream: `…:stream/<name>/consumer/<consumer>:<timestamp>` → `…:stream/<name>`. */
export const streamOfConsumer = (consumerArn: string): string => consumerArn.replace(/\/consumer\/.*$/, "");

/** The resource a Kinesis call acts on, as IAM names it. */
function resourceOf(operation: string, body: Body, arns: KinesisArns): string {
  if (ACCOUNT_OPERATIONS.has(operation)) return "*";
  if (CONSUMER_OPERATIONS.has(operation)) {
    const consumer = text(body.ConsumerARN);
    if (consumer) return consumer;
  }
  const stream =
    text(body.StreamARN) ??
    (text(body.StreamName) ? arns.streamArnOfName(String(body.StreamName)) : undefined);
  if (stream) return stream;
  if (operation === "GetRecords" && text(body.ShardIterator))
    // An iterator not handed out here: only a grant on every stream allows reading it.
    return arns.streamOfIterator(String(body.ShardIterator)) ?? "*";
  return "*";
}

/**
 * The IAM questions of one Kinesis request. A ListShards page after the first names only its
 * `NextToken` (no stream): the first page was asked about, so it asks nothing.
 */
export function kinesisAuthz(
  operation: string,
  body: Body,
  arns: KinesisArns,
  region: string,
): AuthzRequest[] {
  if (operation === "ListShards" && !body.StreamName && !body.StreamARN && body.NextToken) return [];
  const resource = resourceOf(operation, body, arns);
  const out: AuthzRequest[] = [{ action: `kinesis:${operation}`, resource }];
  const stream = resource === "*" ? undefined : streamOfConsumer(resource);
  const key = stream ? arns.keyOf(stream) : undefined;
  if (key) {
    const context = { "kms:ViaService": `kinesis.${region}.amazonaws.com` };
    if (PRODUCER_OPERATIONS.has(operation))
      out.push({ action: "kms:GenerateDataKey", resource: key, context });
    if (CONSUMER_READS.has(operation)) out.push({ action: "kms:Decrypt", resource: key, context });
  }
  return out;
}

/** How many iterators the gateway remembers: they expire after 5 minutes (GetShardIterator API reference). */
const MAX_ITERATORS = 100_000;

/**
 * Which stream each shard iterator the gateway handed out reads: learnt from GetShardIterator's
 * answer (its request names the stream) and GetRecords' (`NextShardIterator` reads the same stream).
 */
export interface IteratorStreams {
  streamOf(iterator: string): string | undefined;
  /** Notes the iterators of an answer to `operation` (whose request read `streamArn`). */
  learn(operation: string, streamArn: string | undefined, answer: string): void;
}

/** An empty iterator table, remembering at most 100,000 iterators (the oldest go first). */
export function iteratorStreams(): IteratorStreams {
  const streams = new Map<string, string>();
  const remember = (iterator: unknown, streamArn: string) => {
    if (typeof iterator !== "string") return;
    streams.set(iterator, streamArn);
    // Oldest first: a Map iterates in insertion order.
    if (streams.size > MAX_ITERATORS) streams.delete(streams.keys().next().value as string);
  };
  return {
    streamOf: (iterator) => streams.get(iterator),
    learn(operation, streamArn, answer) {
      if (!streamArn || (operation !== "GetShardIterator" && operation !== "GetRecords")) return;
      let parsed: { ShardIterator?: unknown; NextShardIterator?: unknown };
      try {
        parsed = JSON.parse(answer) as typeof parsed;
      } catch {
        return;
      }
      remember(operation === "GetShardIterator" ? parsed.ShardIterator : parsed.NextShardIterator, streamArn);
    },
  };
}

/** The stream ARN of a stream name in the gateway's account and region. */
export const streamArnOf = (region: string, accountId: string, name: string): string =>
  `arn:aws:kinesis:${region}:${accountId}:stream/${name}`;

/** The gateway's Kinesis stage: it notes the iterators of each answer, so later GetRecords name their stream. */
export interface KinesisGatewayStage {
  readonly iterators: IteratorStreams;
  /** The rewrite that notes the answer's iterators (leaving the answer as it is), for the calls that hand some out. */
  answer(operation: string, body: Body): ((answer: string) => string) | undefined;
}

/** The Kinesis stage of one gateway, in the gateway's region and account. */
export function kinesisGatewayStage(region: string, accountId: string): KinesisGatewayStage {
  const iterators = iteratorStreams();
  return {
    iterators,
    answer(operation, body) {
      if (operation !== "GetShardIterator" && operation !== "GetRecords") return undefined;
      const stream =
        text(body.StreamARN) ??
        (text(body.StreamName) ? streamArnOf(region, accountId, String(body.StreamName)) : undefined) ??
        (text(body.ShardIterator) ? iterators.streamOf(String(body.ShardIterator)) : undefined);
      return (answer) => {
        iterators.learn(operation, stream, answer);
        return answer;
      };
    },
  };
}
