import { Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import { ConsumerFunction, DedupTable, OutboxTable, QueueWithDlq } from "reliable-consumers/cdk";

/** The README's Install example, plus the table the handler writes to and an outbox with the prebuilt relay. */
export class ConsumerAppStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);

    // README "Install": the CDK example (docs/getting-started.md includes the region).
    // #region stack
    const orders = new QueueWithDlq(this, "Orders", { consumerTimeout: Duration.seconds(30) });
    const dedup = new DedupTable(this, "Dedup");
    const consumer = new ConsumerFunction(this, "OrderConsumer", { entry: "src/orderHandler.ts" });
    consumer.addSqsTrigger(orders);
    dedup.addConsumer(consumer);
    // #endregion stack

    const ordersTable = new dynamodb.Table(this, "OrdersTable", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    ordersTable.grantWriteData(consumer.function);
    consumer.addEnvironment("ORDERS_TABLE_NAME", ordersTable.tableName);

    // #region outbox
    // An outbox whose events the library's prebuilt relay publishes to a queue: no relay code here.
    const outbox = new OutboxTable(this, "Outbox", { removalPolicy: RemovalPolicy.DESTROY });
    const events = new QueueWithDlq(this, "Events", { consumerTimeout: Duration.seconds(30) });
    const relay = outbox.addRelay();
    events.queue.grantSendMessages(relay.function);
    // #endregion outbox
  }
}
