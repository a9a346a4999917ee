/**
 * A DynamoDB Streams record read into its envelope. The body, checked by the user's schema, is the
 * item the change is about: the new image for INSERT and MODIFY, the old image for REMOVE (what was
 * deleted); when the stream's view type does not carry that image (KEYS_ONLY, NEW_IMAGE for a
 * REMOVE, OLD_IMAGE for an INSERT), the keys. Every part is in the envelope as well, unmarshalled.
 *
 * A delete by Time to Live is told apart from a user's: "Items that are deleted by the Time to Live
 * process after expiration have the following fields: Records[].userIdentity.type "Service",
 * Records[].userIdentity.principalId "dynamodb.amazonaws.com"" (DynamoDB API reference, Streams
 * `Record.userIdentity`).
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { DynamoDBRecord } from "aws-lambda";
import { type Envelope, resolveDedupKey } from "../core/envelope.ts";
import { businessKeyOf, validateBody } from "../streams/recordBody.ts";
import { itemKeyOf, type PlainItem, unmarshallImage } from "./streamImage.ts";

/** The kind of change a DynamoDB Streams record is. */
export type DynamoDbEventName = "INSERT" | "MODIFY" | "REMOVE";

/** The DynamoDB Streams envelope: the common envelope plus the change, unmarshalled. */
export interface DynamoDbStreamEnvelope<T = unknown> extends Envelope<T> {
  /** INSERT, MODIFY or REMOVE. */
  readonly eventName: DynamoDbEventName;
  /** The item's primary key attributes. */
  readonly keys: PlainItem;
  /** The item after the change; absent for REMOVE and when the stream view type has no new image. */
  readonly newImage: PlainItem | undefined;
  /** The item before the change; absent for INSERT and when the stream view type has no old image. */
  readonly oldImage: PlainItem | undefined;
  /** A REMOVE made by Time to Live (`userIdentity` type `Service`, principal `dynamodb.amazonaws.com`), not by a user. */
  readonly removedByTtl: boolean;
  /** The record's sequence number in its shard. */
  readonly sequenceNumber: string;
  /** The table stream's ARN (`eventSourceARN`). */
  readonly streamArn: string;
  /** When the change was made, in epoch seconds (DynamoDB rounds it; DynamoDB Local to the minute). */
  readonly approximateCreationDateTime: number | undefined;
}

/** How a DynamoDB Streams record is read into its envelope: schema and business key. */
export interface DynamoDbStreamEnvelopeOptions<T> {
  /** Standard Schema (zod, valibot, arktype...) the body (the image the change is about) must satisfy. */
  readonly schema?: StandardSchemaV1<unknown, T>;
  /**
   * The business key: a dedup key that survives the change being written again (an item key plus
   * its version, say). @default the record's `eventID`
   */
  readonly key?: (body: T, record: DynamoDBRecord) => string | undefined;
}

/** True for a REMOVE made by Time to Live. */
export function removedByTtl(record: DynamoDBRecord): boolean {
  const who = record.userIdentity as { type?: unknown; principalId?: unknown } | undefined;
  return (
    record.eventName === "REMOVE" && who?.type === "Service" && who.principalId === "dynamodb.amazonaws.com"
  );
}

/** Normalises a DynamoDB Streams record. Bad input throws a typed permanent error. */
export async function toDynamoDbStreamEnvelope<T>(
  record: DynamoDBRecord,
  options: DynamoDbStreamEnvelopeOptions<T>,
): Promise<DynamoDbStreamEnvelope<T>> {
  const d = record.dynamodb ?? {};
  const eventName = record.eventName as DynamoDbEventName;
  const keys = unmarshallImage(d.Keys, "Keys") ?? {};
  const newImage = unmarshallImage(d.NewImage, "NewImage");
  const oldImage = unmarshallImage(d.OldImage, "OldImage");
  const image = eventName === "REMOVE" ? oldImage : newImage;
  const marshalled = (eventName === "REMOVE" ? d.OldImage : d.NewImage) ?? d.Keys ?? {};
  const body = await validateBody(
    options.schema,
    image ?? keys,
    eventName === "REMOVE" ? "OldImage" : "NewImage",
  );
  const sequenceNumber = d.SequenceNumber ?? "";
  const streamArn = record.eventSourceARN ?? "";
  const { id, idSource } = resolveDedupKey(
    businessKeyOf(options.key, body, record),
    {},
    record.eventID ?? "",
  );
  return {
    id,
    idSource,
    // The ordering key: the item's primary key (`ordering: "key"`).
    key: itemKeyOf(d.Keys),
    body,
    raw: JSON.stringify(marshalled),
    headers: {},
    // Lambda does not say how often it delivered a stream record before.
    attempt: 1,
    source: { kind: "dynamodb-stream", streamArn, sequenceNumber },
    eventName,
    keys,
    newImage,
    oldImage,
    removedByTtl: removedByTtl(record),
    sequenceNumber,
    streamArn,
    approximateCreationDateTime: d.ApproximateCreationDateTime,
  };
}
