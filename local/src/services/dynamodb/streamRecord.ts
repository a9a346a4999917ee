/**
 * A DynamoDB Streams record (the Streams API's shape, as the SDK returns it) in the shape Lambda
 * hands a function: binary as base64, ApproximateCreationDateTime as epoch seconds.
 */
import type {
  AttributeValue as StreamsAttributeValue,
  _Record as StreamsRecord,
} from "@aws-sdk/client-dynamodb-streams";
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from "aws-lambda";

function b64(u: Uint8Array): string {
  return Buffer.from(u).toString("base64");
}

/** SDK (Streams API) attribute value → the Lambda event's JSON shape. */
export function toLambdaAttributeValue(v: StreamsAttributeValue): LambdaAttributeValue {
  if (v.S !== undefined) return { S: v.S };
  if (v.N !== undefined) return { N: v.N };
  if (v.B !== undefined) return { B: b64(v.B) };
  if (v.BOOL !== undefined) return { BOOL: v.BOOL };
  if (v.NULL !== undefined) return { NULL: v.NULL };
  if (v.SS !== undefined) return { SS: v.SS };
  if (v.NS !== undefined) return { NS: v.NS };
  if (v.BS !== undefined) return { BS: v.BS.map(b64) };
  if (v.L !== undefined) return { L: v.L.map(toLambdaAttributeValue) };
  if (v.M !== undefined) return { M: toLambdaImage(v.M) };
  return { NULL: true };
}

export function toLambdaImage(
  image: Record<string, StreamsAttributeValue>,
): Record<string, LambdaAttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([k, v]) => [k, toLambdaAttributeValue(v)]));
}

/** One Streams API record → the record Lambda puts into a DynamoDBStreamEvent. */
export function toStreamRecord(record: StreamsRecord, streamArn: string, region: string): DynamoDBRecord {
  const d = record.dynamodb ?? {};
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord["eventName"],
    eventVersion: record.eventVersion ?? "1.1",
    eventSource: "aws:dynamodb",
    awsRegion: region,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(d.ApproximateCreationDateTime
        ? { ApproximateCreationDateTime: Math.floor(d.ApproximateCreationDateTime.getTime() / 1000) }
        : {}),
      ...(d.Keys ? { Keys: toLambdaImage(d.Keys) } : {}),
      ...(d.NewImage ? { NewImage: toLambdaImage(d.NewImage) } : {}),
      ...(d.OldImage ? { OldImage: toLambdaImage(d.OldImage) } : {}),
      ...(d.SequenceNumber ? { SequenceNumber: d.SequenceNumber } : {}),
      ...(d.SizeBytes !== undefined ? { SizeBytes: d.SizeBytes } : {}),
      ...(d.StreamViewType ? { StreamViewType: d.StreamViewType } : {}),
    },
  };
}
