import { Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import {
  ConsumerFunction,
  DedupTable,
  KinesisStream,
  OutboxTable,
  QueueWithDlq,
} from "reliable-consumers/cdk";

/**
 * The README's Install example, plus the table the handler writes to, an outbox with the prebuilt
 * relay, and two stream consumers: a Kinesis stream's and a DynamoDB table's.
 */
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

    // Stream consumers: clicks on a Kinesis stream, and the changes of a payments table, each
    // handler counting its effect per record on the effects table (the test counts them).
    const effects = new dynamodb.Table(this, "EffectsTable", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const clicks = new KinesisStream(this, "Clicks", { shardCount: 1, removalPolicy: RemovalPolicy.DESTROY });
    const clickConsumer = new ConsumerFunction(this, "ClickConsumer", { entry: "src/clickHandler.ts" });
    // Each trigger gets an encrypted queue that is both the mapping's on-failure destination and
    // the consumer's parking queue (DLQ_URL), with partial batch responses and bisection on.
    clickConsumer.addKinesisTrigger(clicks);
    dedup.addConsumer(clickConsumer);

    const payments = new dynamodb.Table(this, "PaymentsTable", {
      partitionKey: { name: "id", type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      stream: dynamodb.StreamViewType.NEW_IMAGE,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const paymentConsumer = new ConsumerFunction(this, "PaymentConsumer", { entry: "src/paymentHandler.ts" });
    paymentConsumer.addDynamoDbStreamTrigger(payments);
    dedup.addConsumer(paymentConsumer);

    for (const c of [clickConsumer, paymentConsumer]) {
      effects.grantWriteData(c.function);
      c.addEnvironment("EFFECTS_TABLE_NAME", effects.tableName);
    }
  }
}
