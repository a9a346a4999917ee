import type { KinesisStreamEvent, KinesisStreamRecord } from "aws-lambda";

/** One record as a producer put it: its data (an object is sent as JSON) and its partition key. */
export interface PutRecord {
  readonly data: Buffer | string | object;
  readonly partitionKey: string;
}

/** A shard of a test stream: its records get sequence numbers in order, as Kinesis gives them. */
export interface TestShard {
  readonly streamArn: string;
  readonly shardId: string;
  /** The records put so far, each with its sequence number. */
  readonly records: KinesisStreamRecord[];
}

export function testShard(streamName: string, shardId = "shardId-000000000000"): TestShard {
  const region = process.env.AWS_REGION ?? "us-east-1";
  return { streamArn: `arn:aws:kinesis:${region}:000000000000:stream/${streamName}`, shardId, records: [] };
}

const bytesOf = (data: PutRecord["data"]): Buffer =>
  Buffer.isBuffer(data) ? data : Buffer.from(typeof data === "string" ? data : JSON.stringify(data), "utf8");

/**
 * Puts records on the shard: each a record in the shape Lambda's Kinesis trigger builds (Lambda
 * developer guide, "Using Lambda with Kinesis Data Streams", example event), with a 56-digit
 * sequence number that grows along the shard.
 */
export function putRecords(shard: TestShard, puts: ReadonlyArray<PutRecord>): KinesisStreamRecord[] {
  const region = process.env.AWS_REGION ?? "us-east-1";
  const added = puts.map((put, i) => {
    const sequenceNumber = (
      49590338271490256608559692538361571095921575989136588898n +
      BigInt(shard.records.length + i) * 1000n
    ).toString();
    return {
      kinesis: {
        kinesisSchemaVersion: "1.0",
        partitionKey: put.partitionKey,
        sequenceNumber,
        data: bytesOf(put.data).toString("base64"),
        approximateArrivalTimestamp: 1_545_084_650.987 + shard.records.length + i,
      },
      eventSource: "aws:kinesis",
      eventVersion: "1.0",
      eventID: `${shard.shardId}:${sequenceNumber}`,
      eventName: "aws:kinesis:record",
      invokeIdentityArn: "arn:aws:iam::000000000000:role/lambda-role",
      awsRegion: region,
      eventSourceARN: shard.streamArn,
    } satisfies KinesisStreamRecord;
  });
  shard.records.push(...added);
  return added;
}

/** The batch Lambda sends from `fromSequence` on (inclusive), as after a partial batch response. */
export function batchFrom(shard: TestShard, fromSequence?: string): KinesisStreamEvent {
  const from = fromSequence === undefined ? undefined : BigInt(fromSequence);
  return {
    Records: shard.records.filter((r) => from === undefined || BigInt(r.kinesis.sequenceNumber) >= from),
  };
}
