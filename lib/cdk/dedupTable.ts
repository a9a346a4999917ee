import { Annotations, Duration, RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";
import {
  DEDUP_DEFAULTS,
  DEDUP_PARTITION_KEY,
  DEDUP_TABLE_ACTIONS,
  DEDUP_TTL_ATTRIBUTE,
} from "../dedup/schema.ts";
import { LAMBDA_ENV } from "../env.ts";
import type { ConsumerFunctionBase } from "./consumerFunctionBase.ts";
import { dedupWindowValidation, type RetryPath } from "./rules/dedupRules.ts";

/** Props of `DedupTable`. */
export interface DedupTableProps {
  /** The table's name (3–255 characters: letters, digits, `_`, `-`, `.`). @default - a CloudFormation-generated name */
  readonly tableName?: string;
  /**
   * How long a key is remembered: the TTL the dedup store writes (passed to consumers as
   * `DEDUP_WINDOW_SECONDS`). Must be longer than the longest retry path of every consumer that
   * uses the table, counting the copies the library sends itself (parked, redriven, replayed);
   * synth fails otherwise (`DedupWindowTooShort`). @default DEDUP_DEFAULTS.windowSeconds (30 days)
   */
  readonly window?: Duration;
  /** A customer-managed key; consumers granted `grantDedup` may use it. @default - AWS-managed key */
  readonly encryptionKey?: kms.IKey;
  /** Point-in-time recovery (35 days of backups). @default true */
  readonly pointInTimeRecovery?: boolean;
  /**
   * What deleting the stack does to the table.
   * @default RemovalPolicy.RETAIN: losing the table turns every redelivery into a duplicate effect
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Options of `DedupTable.fromTable`. */
export interface ImportedDedupTableOptions {
  /** As `DedupTableProps.window`: the TTL consumers write, checked against their retry paths. @default DEDUP_DEFAULTS.windowSeconds (30 days) */
  readonly window?: Duration;
}

/**
 * What every dedup table offers, built here or imported: consumers that deduplicate on it
 * (`addConsumer`), the grant of the dedup store's operations, and the dedup window rule (synth
 * fails when the window is not longer than every consumer's retry path).
 */
export abstract class DedupTableBase extends Construct {
  /** The DynamoDB table. */
  abstract readonly table: dynamodb.ITable;
  /** How long a key is remembered: the TTL consumers write, checked against their retry paths. */
  abstract readonly window: Duration;
  private readonly retryPaths: Array<() => RetryPath> = [];

  /** Creates the construct and adds the dedup window rule as a synth validation. */
  protected constructor(scope: Construct, id: string) {
    super(scope, id);
    this.node.addValidation(
      dedupWindowValidation(
        this.node.path,
        () => this.window.toSeconds(),
        () => this.retryPaths.map((p) => p()),
      ),
    );
  }

  /** The table's name. */
  get tableName(): string {
    return this.table.tableName;
  }

  /** What `ConsumerFunction.useDedupWindow` sets, so a consumer writes the window synth checks. */
  get windowEnvironment(): Readonly<Record<string, string>> {
    return {
      [LAMBDA_ENV.dedupTableName]: this.table.tableName,
      [LAMBDA_ENV.dedupWindowSeconds]: String(this.window.toSeconds()),
    };
  }

  /**
   * Declares a way messages reach a consumer of this table. Evaluated at synth, so triggers added
   * later still count. Prefer `addConsumer` (or `ConsumerFunction.useDedupWindow`), which declares its triggers' paths.
   */
  addRetryPath(path: () => RetryPath): void {
    this.retryPaths.push(path);
  }

  /**
   * A consumer that deduplicates on this table: grants the dedup store's operations, exports
   * `DEDUP_TABLE_NAME` and `DEDUP_WINDOW_SECONDS`, and checks this table's window against the
   * consumer's retry paths at synth (triggers added later count too).
   */
  addConsumer(consumer: ConsumerFunctionBase): void {
    this.grantDedup(consumer.function);
    consumer.useDedupWindow(this);
  }

  /** Exactly the dedup store's operations (`DEDUP_TABLE_ACTIONS`), on this table only. */
  grantDedup(grantee: iam.IGrantable): iam.Grant {
    const grant = iam.Grant.addToPrincipal({
      grantee,
      actions: [...DEDUP_TABLE_ACTIONS],
      resourceArns: [this.table.tableArn],
    });
    this.table.encryptionKey?.grantEncryptDecrypt(grantee);
    return grant;
  }
}

/**
 * The idempotency table: `PAY_PER_REQUEST`, keyed and expired by the attribute names of
 * `lib/dedup/schema.ts`. Consumers that use it declare their retry paths; synth fails when the
 * window is not longer than all of them. `DedupTable.fromTable` takes a table made elsewhere.
 */
export class DedupTable extends DedupTableBase {
  /**
   * A dedup table made elsewhere (`dynamodb.Table.fromTableName`, another stack): the same
   * consumers, grants and window rule. Its key schema and TTL cannot be read at synth: the table
   * must have the partition key `pk` (S) and TTL on `expiresAt` (`DEDUP_TABLE` in the library),
   * which synth says as a warning. A table imported without its key (`fromTableName`) gets no
   * `kms:` grant: import it with `encryptionKey` when it has a customer-managed key.
   */
  static fromTable(
    scope: Construct,
    id: string,
    table: dynamodb.ITable,
    options: ImportedDedupTableOptions = {},
  ): DedupTableBase {
    return new ImportedDedupTable(scope, id, table, options);
  }

  /** The table: PAY_PER_REQUEST, partition key `pk` (S), TTL on `expiresAt`. */
  readonly table: dynamodb.Table;
  /** How long a key is remembered (`props.window`). */
  readonly window: Duration;

  /** Creates the dedup table. */
  constructor(scope: Construct, id: string, props: DedupTableProps = {}) {
    super(scope, id);
    this.window = props.window ?? Duration.seconds(DEDUP_DEFAULTS.windowSeconds);
    this.table = new dynamodb.Table(this, "Table", {
      ...(props.tableName ? { tableName: props.tableName } : {}),
      partitionKey: { name: DEDUP_PARTITION_KEY, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: DEDUP_TTL_ATTRIBUTE,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: props.pointInTimeRecovery ?? true },
      ...(props.encryptionKey
        ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: props.encryptionKey }
        : { encryption: dynamodb.TableEncryption.AWS_MANAGED }),
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
  }
}

/** `DedupTable.fromTable`'s table. */
class ImportedDedupTable extends DedupTableBase {
  readonly table: dynamodb.ITable;
  readonly window: Duration;

  constructor(scope: Construct, id: string, table: dynamodb.ITable, options: ImportedDedupTableOptions) {
    super(scope, id);
    this.table = table;
    this.window = options.window ?? Duration.seconds(DEDUP_DEFAULTS.windowSeconds);
    Annotations.of(this).addWarningV2(
      "reliable-consumers:dedupTable:importedSchema",
      `imported dedup table: its key schema and TTL are not checked at synth; it must have the ` +
        `partition key ${DEDUP_PARTITION_KEY} (S) and TTL on ${DEDUP_TTL_ATTRIBUTE}.`,
    );
  }
}
