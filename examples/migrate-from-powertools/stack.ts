// The consumer's stack after the migration, with the cut-over's grant.
// docs/migrating-from-powertools.md includes this file; test/infra/powertoolsCutover.test.ts synthesizes it.
import { join } from "node:path";
import { Duration, Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import { ConsumerFunction, DedupTable, grantPowertoolsTableRead, QueueWithDlq } from "reliable-consumers/cdk";

/** Props of `OrdersStack`. */
export interface OrdersStackProps extends StackProps {
  /** The idempotency table the Powertools function wrote. */
  readonly powertoolsTableName: string;
  /** The Powertools function's name: the prefix of its keys. */
  readonly powertoolsFunctionName: string;
  /** The end of the cut-over window (ISO 8601). */
  readonly cutoverUntil: string;
}

/** The orders queue, its consumer (after.ts), and the tables it uses. */
export class OrdersStack extends Stack {
  constructor(scope: Construct, id: string, props: OrdersStackProps) {
    super(scope, id, props);
    const timeout = Duration.seconds(30);
    const orders = new QueueWithDlq(this, "Orders", { consumerTimeout: timeout });
    const dedup = new DedupTable(this, "Dedup");
    const app = new dynamodb.TableV2(this, "App", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
    });
    const consumer = new ConsumerFunction(this, "OrdersConsumer", {
      entry: join(import.meta.dirname, "after.ts"),
      consumerName: "orders",
      timeout,
      environment: { APP_TABLE_NAME: app.tableName },
    });
    app.grant(consumer.function, "dynamodb:UpdateItem");
    dedup.addConsumer(consumer);
    consumer.addSqsTrigger(orders);

    // #region grant
    const powertoolsTable = dynamodb.Table.fromTableName(this, "PowertoolsTable", props.powertoolsTableName);
    grantPowertoolsTableRead(consumer.function, powertoolsTable);
    consumer
      .addEnvironment("POWERTOOLS_TABLE_NAME", powertoolsTable.tableName)
      .addEnvironment("POWERTOOLS_KEY_PREFIX", props.powertoolsFunctionName)
      .addEnvironment("POWERTOOLS_CUTOVER_UNTIL", props.cutoverUntil);
    // #endregion grant
  }
}
