/**
 * The Kinesis Data Streams trigger's event, as Lambda builds it (Lambda developer guide, "Using
 * Lambda with Kinesis Data Streams", example event):
 *
 * ```json
 * { "Records": [ { "kinesis": { "kinesisSchemaVersion": "1.0", "partitionKey": "1",
 *     "sequenceNumber": "4959…", "data": "SGVsbG8=", "approximateArrivalTimestamp": 1545084650.987 },
 *   "eventSource": "aws:kinesis", "eventVersion": "1.0",
 *   "eventID": "shardId-000000000006:4959…", "eventName": "aws:kinesis:record",
 *   "invokeIdentityArn": "arn:aws:iam::…", "awsRegion": "us-east-2",
 *   "eventSourceARN": "arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream" } ] }
 * ```
 *
 * `data` is base64; `eventID` is `<shardId>:<sequenceNumber>`. One batch holds the records of one
 * shard, in sequence order.
 */
import type { KinesisStreamEvent, KinesisStreamRecord } from "aws-lambda";
import { UnknownEventShapeError } from "../core/errors.ts";
import type { StreamCoordinates } from "../streams/streamAnswer.ts";

/** Throws UnknownEventShapeError unless this is a Kinesis trigger's event (its shape only). */
export function assertKinesisEvent(event: unknown): asserts event is KinesisStreamEvent {
  const records = (event as { Records?: unknown } | null)?.Records;
  if (!Array.isArray(records))
    throw new UnknownEventShapeError("expected a Kinesis event with a Records array");
  records.forEach((r: Partial<KinesisStreamRecord> | null, i) => {
    const k = r?.kinesis;
    if (
      r?.eventSource !== "aws:kinesis" ||
      typeof k !== "object" ||
      k === null ||
      typeof k.sequenceNumber !== "string" ||
      typeof k.data !== "string"
    ) {
      throw new UnknownEventShapeError(
        `record ${i} is not a Kinesis record (eventSource=${String(r?.eventSource).slice(0, 40)})`,
      );
    }
  });
}

/** The shard id in an `eventID` (`shardId-000000000006:<sequenceNumber>`); undefined when it has none. */
export function shardIdOf(eventID: string | undefined): string | undefined {
  if (!eventID) return undefined;
  const colon = eventID.indexOf(":");
  return colon > 0 ? eventID.slice(0, colon) : undefined;
}

/** Where a Kinesis record sits: stream ARN, shard id, sequence number. */
export const kinesisCoordinates = (r: KinesisStreamRecord): StreamCoordinates => ({
  streamArn: r.eventSourceARN,
  shardId: shardIdOf(r.eventID),
  sequenceNumber: r.kinesis.sequenceNumber,
});

/**
 * The last-resort dedup key of a Kinesis record: `<streamArn>/<shardId>/<sequenceNumber>`. It
 * catches Lambda's own resends only: a producer's retry of PutRecord writes a new record with a
 * new sequence number, so give a business `key` where the payload has one.
 */
export function kinesisBrokerId(r: KinesisStreamRecord): string {
  const c = kinesisCoordinates(r);
  return `${c.streamArn}/${c.shardId ?? ""}/${c.sequenceNumber}`;
}
