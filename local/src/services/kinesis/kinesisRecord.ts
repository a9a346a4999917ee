/**
 * A Kinesis record (the GetRecords shape, as the SDK returns it) in the shape Lambda hands a
 * function (Lambda developer guide, "Using Lambda with Kinesis Data Streams", sample event):
 * `eventID` is `<shardId>:<sequenceNumber>`, `kinesis.data` base64, `approximateArrivalTimestamp`
 * epoch seconds with milliseconds as the fraction, `kinesisSchemaVersion` and `eventVersion` "1.0",
 * `invokeIdentityArn` the function's execution role.
 */
import type { _Record as SdkRecord } from "@aws-sdk/client-kinesis";
import type { KinesisStreamRecord } from "aws-lambda";

/** Where a record came from, as the event names it. */
export interface RecordOrigin {
  readonly shardId: string;
  readonly streamArn: string;
  readonly region: string;
  /** The function's execution role ARN. */
  readonly roleArn: string;
}

/** One GetRecords record → the record Lambda puts into a KinesisStreamEvent. */
export function toKinesisEventRecord(r: SdkRecord, origin: RecordOrigin): KinesisStreamRecord {
  const sequenceNumber = r.SequenceNumber ?? "";
  return {
    kinesis: {
      kinesisSchemaVersion: "1.0",
      partitionKey: r.PartitionKey ?? "",
      sequenceNumber,
      data: Buffer.from(r.Data ?? new Uint8Array()).toString("base64"),
      approximateArrivalTimestamp: (r.ApproximateArrivalTimestamp?.getTime() ?? Date.now()) / 1000,
    },
    eventSource: "aws:kinesis",
    eventVersion: "1.0",
    eventID: `${origin.shardId}:${sequenceNumber}`,
    eventName: "aws:kinesis:record",
    invokeIdentityArn: origin.roleArn,
    awsRegion: origin.region,
    eventSourceARN: origin.streamArn,
  };
}

/**
 * What a FilterCriteria pattern sees of a Kinesis record: the `kinesis` fields, with `data`
 * decoded and parsed when it is JSON (Lambda's "Filtering Kinesis events": a pattern on `data`
 * matches only JSON payloads; other fields by their values).
 */
export function filterView(record: KinesisStreamRecord): Record<string, unknown> {
  const text = Buffer.from(record.kinesis.data, "base64").toString("utf8");
  let data: unknown = record.kinesis.data;
  try {
    data = JSON.parse(text);
  } catch {
    // Not JSON: a pattern on `data` cannot match it.
  }
  return { ...record.kinesis, data };
}

/** Order of two sequence numbers (decimal strings of up to 128 bits). */
export function compareSequence(a: string, b: string): number {
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
}
