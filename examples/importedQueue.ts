// The CDK guide's existing queue and table (docs/cdk.md includes the region);
// test/infra/importedResources.test.ts synthesises it and checks its grants.
import { Duration, Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { ConsumerFunction, DedupTable } from "reliable-consumers/cdk";

/** Resources another team owns, and the consumer's handler file. */
export interface ExistingQueueProps extends StackProps {
  readonly queueArn: string;
  readonly deadLetterQueueArn: string;
  readonly dedupTableName: string;
  /** e.g. `src/orderHandler.ts` */
  readonly entry: string;
}

export class ExistingQueueStack extends Stack {
  readonly consumer: ConsumerFunction;

  constructor(scope: Construct, id: string, existing: ExistingQueueProps) {
    super(scope, id, existing);
    // #region imported
    const queue = sqs.Queue.fromQueueArn(this, "Orders", existing.queueArn);
    const deadLetterQueue = sqs.Queue.fromQueueArn(this, "OrdersDlq", existing.deadLetterQueueArn);
    const table = DedupTable.fromTable(
      this,
      "Dedup",
      dynamodb.Table.fromTableName(this, "DedupTable", existing.dedupTableName),
      { window: Duration.days(30) },
    );

    const consumer = new ConsumerFunction(this, "OrderConsumer", {
      entry: existing.entry,
      timeout: Duration.seconds(30),
    });
    table.addConsumer(consumer);
    // Synth warns that it cannot read the queue's visibility timeout and retention.
    consumer.addSqsTrigger(queue, { deadLetterQueue, batchSize: 10 });
    // #endregion imported
    this.consumer = consumer;
  }
}
