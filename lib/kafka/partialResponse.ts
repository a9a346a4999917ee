/**
 * The partial batch response of a Kafka event source mapping (provisioned mode with
 * `FunctionResponseTypes: ["ReportBatchItemFailures"]`). Unlike SQS, Kinesis and DynamoDB Streams,
 * the `itemIdentifier` is an object naming the topic-partition (the key of `event.records`) and the
 * offset to resume from:
 *
 * ```json
 * { "batchItemFailures": [ { "itemIdentifier": { "partition": "orders-3", "offset": 42 } } ] }
 * ```
 *
 * Checked against docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html as quoted by
 * Middy's event-batch-response, and against Powertools for AWS Lambda (Python)'s `KafkaItemIdentifier`
 * (`partition: str`, `offset: int`; `EventType.Kafka`, aws-powertools/powertools-lambda-python#7941);
 * the aws-lambda-rust-runtime `KafkaEventResponse` (an open pull request, #1164) agrees: a flat
 * string identifier is invalid for Kafka, and an identifier naming a partition or offset that was not
 * in the event fails the whole batch. Lambda resumes each reported partition at the given offset;
 * partitions not named are committed in full. So we report, per partition, the *lowest* offset that
 * is not finished, and never anything else.
 */
export interface KafkaItemIdentifier {
  /** `<topic>-<partition>`, exactly the key of `event.records`. */
  readonly partition: string;
  /** The offset Lambda resumes the partition at: the lowest one not finished. */
  readonly offset: number;
}

/** One entry of a Kafka partial batch response. */
export interface KafkaBatchItemFailure {
  /** The partition and the offset to resume it at. */
  readonly itemIdentifier: KafkaItemIdentifier;
}

/** The partial batch response of a Kafka event source mapping. */
export interface KafkaBatchResponse {
  /** One entry per partition with an unfinished record; empty when the whole batch is done. */
  readonly batchItemFailures: KafkaBatchItemFailure[];
}

/** One failure per partition: the lowest unfinished offset. Partition order follows first appearance. */
export function kafkaBatchResponse(
  unfinished: Iterable<{ readonly partitionKey: string; readonly offset: number }>,
): KafkaBatchResponse {
  const lowest = new Map<string, number>();
  for (const r of unfinished) {
    const seen = lowest.get(r.partitionKey);
    if (seen === undefined || r.offset < seen) lowest.set(r.partitionKey, r.offset);
  }
  return {
    batchItemFailures: [...lowest].map(([partition, offset]) => ({ itemIdentifier: { partition, offset } })),
  };
}
