// The CDK guide's Kinesis and DynamoDB Streams triggers (docs/cdk.md includes the region);
// test/infra/streamTriggers.test.ts synthesises it and checks its mappings.
import { Duration, Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import { ConsumerFunction, DedupTable, KinesisStream } from "reliable-consumers/cdk";

/** The consumers' handler files. */
export interface StreamConsumersProps extends StackProps {
  /** e.g. `src/orderEvents.ts` (a `kinesisConsumer`) */
  readonly kinesisEntry: string;
  /** e.g. `src/accountAudit.ts` (a `dynamodbStreamConsumer`) */
  readonly dynamoDbEntry: string;
}

export class StreamConsumersStack extends Stack {
  constructor(scope: Construct, id: string, props: StreamConsumersProps) {
    super(scope, id, props);
    // #region streams
    const dedup = new DedupTable(this, "Dedup");

    // On-demand, encrypted with the AWS-managed key; records kept 2 days.
    const orders = new KinesisStream(this, "Orders", { retentionPeriod: Duration.days(2) });
    const orderEvents = new ConsumerFunction(this, "OrderEvents", { entry: props.kinesisEntry });
    dedup.addConsumer(orderEvents);
    orderEvents.addKinesisTrigger(orders, { batchSize: 500 });

    const accounts = new dynamodb.Table(this, "Accounts", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    });
    const audit = new ConsumerFunction(this, "AccountAudit", { entry: props.dynamoDbEntry });
    dedup.addConsumer(audit);
    audit.addDynamoDbStreamTrigger(accounts);
    // #endregion streams
  }
}
