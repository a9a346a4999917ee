/** Every trigger's record, normalised. Adapters build it; handlers and the dedup logic read it. */
export interface Envelope<TBody = unknown> {
  /** The dedup key (see `KeySource`). */
  readonly id: string;
  /** Where `id` came from: a business key, the producer's message id, or broker coordinates. */
  readonly idSource: KeySource;
  /**
   * The ordering key: MessageGroupId, Kafka key or aggregate id. On a fair queue (a standard SQS
   * queue with group ids) it is the tenant, with no order.
   */
  readonly key: string | undefined;
  /** The parsed body (JSON unless the consumer says otherwise). */
  readonly body: TBody;
  /** The body as it arrived. */
  readonly raw: string;
  /** Message attributes / Kafka headers, decoded to strings. */
  readonly headers: Readonly<Record<string, string>>;
  /** 1 on first delivery. */
  readonly attempt: number;
  /**
   * The broker's coordinates of the record: queue ARN and messageId, topic-partition-offset, or stream
   * sequence number.
   */
  readonly source: RecordSource;
}

/** Where a record's dedup key came from. */
export type KeySource = "business" | "producer" | "broker";

/** Where a record came from: its queue, topic-partition-offset or stream sequence number. */
export type RecordSource =
  | { readonly kind: "sqs"; readonly queueArn: string; readonly messageId: string }
  | { readonly kind: "kafka"; readonly topic: string; readonly partition: number; readonly offset: string }
  | {
      readonly kind: "kinesis";
      readonly streamArn: string;
      /** From the record's `eventID`; undefined when Lambda did not give one. */
      readonly shardId: string | undefined;
      readonly sequenceNumber: string;
      readonly partitionKey: string;
    }
  | { readonly kind: "dynamodb-stream"; readonly streamArn: string; readonly sequenceNumber: string };

/** The producer id header / attribute that we honour before falling back to broker coordinates. */
export const MESSAGE_ID_HEADER = "message-id";

export interface ResolvedKey {
  readonly id: string;
  readonly idSource: KeySource;
}

/**
 * Dedup key resolution, in order: the user's business key, the producer's `message-id`, then the
 * broker's coordinates (which catch only the broker's own redeliveries; callers count that).
 */
export function resolveDedupKey(
  businessKey: string | undefined,
  headers: Readonly<Record<string, string>>,
  brokerId: string,
): ResolvedKey {
  if (businessKey !== undefined && businessKey !== "") return { id: businessKey, idSource: "business" };
  const producerId = headers[MESSAGE_ID_HEADER] ?? headers["x-message-id"];
  if (producerId) return { id: producerId, idSource: "producer" };
  return { id: brokerId, idSource: "broker" };
}
