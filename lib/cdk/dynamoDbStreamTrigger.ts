import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import type { ConsumerFunctionBase } from "./consumerFunctionBase.ts";
import { ConsumerRuleError } from "./rules/ruleError.ts";
import { STREAM_TRIGGER_LIMITS } from "./rules/streamRules.ts";
import { StreamTriggerBase, type StreamTriggerOptions, type StreamTriggerSource } from "./streamTrigger.ts";

/** Options of `DynamoDbStreamTrigger` (and `ConsumerFunctionBase.addDynamoDbStreamTrigger`). */
export type DynamoDbStreamTriggerOptions = StreamTriggerOptions;

/**
 * The actions Lambda's DynamoDB Streams mapping needs of the execution role, on the table's stream
 * (Lambda's message when one is missing: "Please ensure the role can perform the GetRecords,
 * GetShardIterator, DescribeStream, and ListStreams Actions on your stream"; the DynamoDB
 * developer guide's policy for a Lambda stream reader scopes all four to the stream ARN).
 */
export const DYNAMODB_STREAM_MAPPING_ACTIONS = [
  "dynamodb:DescribeStream",
  "dynamodb:GetRecords",
  "dynamodb:GetShardIterator",
  "dynamodb:ListStreams",
] as const;

/**
 * A DynamoDB Streams trigger on any table (`dynamodb.ITable` or `ITableV2`, built here or
 * imported with its `tableStreamArn`) with the library's defaults (`StreamTriggerBase`): partial
 * batch responses, bisection, 10 retries, a 6 h record age, TRIM_HORIZON, EventCount metrics, and
 * an SQS on-failure destination that is also the consumer's parking queue (`DLQ_URL`). Grants
 * `DYNAMODB_STREAM_MAPPING_ACTIONS` on the stream only (no `Resource: *`), `kms:Decrypt` on the
 * table's customer-managed key, and send on the queue. The table must have a stream: synth fails
 * otherwise (`DynamoDbTableWithoutStream`). Bind it with `consumer.addTrigger(trigger)`.
 */
export class DynamoDbStreamTrigger extends StreamTriggerBase {
  /** The table whose stream the trigger reads. */
  readonly table: dynamodb.ITable;

  /** A trigger for `table`'s stream; nothing is created until it is bound. */
  constructor(table: dynamodb.ITable, options: DynamoDbStreamTriggerOptions = {}) {
    super(options);
    this.table = table;
  }

  /** The table's stream as the mapping reads it, and its grants. */
  protected resolveSource(consumer: ConsumerFunctionBase): StreamTriggerSource {
    const { table } = this;
    const streamArn = table.tableStreamArn;
    if (!streamArn) {
      throw new ConsumerRuleError(
        "DynamoDbTableWithoutStream",
        `table ${table.node.path} has no stream to read: give the table a stream (dynamodb.Table \`stream\`, ` +
          "e.g. StreamViewType.NEW_AND_OLD_IMAGES; TableV2 `dynamoStream`), or import it with its stream ARN " +
          "(Table.fromTableAttributes({ tableArn, tableStreamArn })).",
        consumer.node.path,
      );
    }
    return {
      source: "dynamodb",
      eventSourceArn: streamArn,
      path: table.node.path,
      retentionSeconds: STREAM_TRIGGER_LIMITS.dynamoDbStreamRetentionSeconds,
      grantRead: (c) => {
        iam.Grant.addToPrincipal({
          grantee: c.function,
          actions: [...DYNAMODB_STREAM_MAPPING_ACTIONS],
          resourceArns: [streamArn],
        });
        table.encryptionKey?.grantDecrypt(c.function);
      },
    };
  }
}
