import { Duration, RemovalPolicy } from "aws-cdk-lib";
import type * as iam from "aws-cdk-lib/aws-iam";
import * as kinesis from "aws-cdk-lib/aws-kinesis";
import type * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";

/** Props of `KinesisStream`. */
export interface KinesisStreamProps {
  /** The stream's name (1–128 letters, digits, `_`, `-`, `.`). @default - a CloudFormation-generated name */
  readonly streamName?: string;
  /**
   * Provisioned capacity: this many shards (each 1 MB/s or 1,000 records/s in, 2 MB/s out),
   * billed per shard-hour whether used or not. Without it the stream is on-demand: Kinesis adds
   * and removes shards with the traffic.
   * @default - on-demand
   */
  readonly shardCount?: number;
  /**
   * How long the stream keeps a record (24 h–365 days). Consumers' triggers read it: a record
   * can come back to a consumer for this long when its maximum record age is unbounded.
   * @default Duration.hours(24)
   */
  readonly retentionPeriod?: Duration;
  /**
   * A customer-managed key. Consumers' triggers get `kms:Decrypt` on it, and `grantWrite`
   * encrypt (`kms:Encrypt`, `kms:ReEncrypt*`, `kms:GenerateDataKey*`) for producers.
   * @default - the AWS-managed key `alias/aws/kinesis` (`StreamEncryption.MANAGED`), which needs no grant
   */
  readonly encryptionKey?: kms.IKey;
  /** What deleting the stack does to the stream. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

/** Options of `KinesisStream.addConsumer`. */
export interface KinesisStreamConsumerOptions {
  /** The registered consumer's name (1–128 letters, digits, `_`, `-`, `.`), unique in the stream. */
  readonly consumerName: string;
}

/**
 * A Kinesis data stream for consumers of the library: on-demand unless given a shard count,
 * always encrypted (the AWS-managed key, or yours), retention 24 h unless given. Attach a consumer
 * with `ConsumerFunctionBase.addKinesisTrigger(stream)`, which reads the retention for the dedup
 * window rule and grants what the mapping needs (decrypt included). `addConsumer` registers an
 * enhanced fan-out consumer (dedicated 2 MB/s per shard) to pass as the trigger's `consumer`.
 * A stream made elsewhere needs no construct: pass `kinesis.Stream.fromStreamArn(...)` (or
 * `fromStreamAttributes` with its `encryptionKey`) to the trigger.
 */
export class KinesisStream extends Construct {
  /** The stream. */
  readonly stream: kinesis.Stream;
  /** How long the stream keeps a record. */
  readonly retentionPeriod: Duration;

  /** Creates the stream. */
  constructor(scope: Construct, id: string, props: KinesisStreamProps = {}) {
    super(scope, id);
    this.retentionPeriod = props.retentionPeriod ?? Duration.hours(24);
    const capacity =
      props.shardCount === undefined
        ? { streamMode: kinesis.StreamMode.ON_DEMAND }
        : { streamMode: kinesis.StreamMode.PROVISIONED, shardCount: props.shardCount };
    const encryption = props.encryptionKey
      ? { encryption: kinesis.StreamEncryption.KMS, encryptionKey: props.encryptionKey }
      : { encryption: kinesis.StreamEncryption.MANAGED };
    this.stream = new kinesis.Stream(this, "Stream", {
      ...(props.streamName ? { streamName: props.streamName } : {}),
      ...capacity,
      ...encryption,
      retentionPeriod: this.retentionPeriod,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
  }

  /** The stream's ARN. */
  get streamArn(): string {
    return this.stream.streamArn;
  }

  /** The stream's name. */
  get streamName(): string {
    return this.stream.streamName;
  }

  /** The customer-managed key, when the stream has one. */
  get encryptionKey(): kms.IKey | undefined {
    return this.stream.encryptionKey;
  }

  /**
   * Registers an enhanced fan-out consumer of the stream (billed per consumer-shard hour and per
   * GB read): pass it as `addKinesisTrigger(stream, { consumer })`.
   */
  addConsumer(id: string, options: KinesisStreamConsumerOptions): kinesis.StreamConsumer {
    return new kinesis.StreamConsumer(this, id, {
      streamConsumerName: options.consumerName,
      stream: this.stream,
    });
  }

  /** Read the stream from your own code (the stream's `grantRead`, and `kms:Decrypt` on its key). */
  grantRead(grantee: iam.IGrantable): iam.Grant {
    return this.stream.grantRead(grantee);
  }

  /** Produce to the stream (the stream's `grantWrite`: PutRecord(s), ListShards, and encrypt on its key). */
  grantWrite(grantee: iam.IGrantable): iam.Grant {
    return this.stream.grantWrite(grantee);
  }
}
