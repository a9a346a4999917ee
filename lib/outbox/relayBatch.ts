/**
 * One relay invocation's records, what each parsed to, and which failed (they are retried from the
 * first): the state the relay's stages (relay.ts) pass along, and the parse that starts it.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { DynamoDBBatchResponse, DynamoDBRecord } from "aws-lambda";
import { describeError } from "../core/errors.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import { NotAnOutboxItemError, StreamViewTypeError } from "./errors.ts";
import { isOutboxKey, type OutboxEvent, parseOutboxItem, positionOf } from "./outboxEvent.ts";
import { OUTBOX_ATTR as A } from "./schema.ts";
import { fromLambdaImage } from "./settle.ts";

export type Parsed =
  | { kind: "event"; event: OutboxEvent; image: Record<string, AttributeValue> }
  | {
      kind: "park";
      error: unknown;
      image: unknown;
      key: { pk: string; sk: string } | undefined;
      /** Its place in its aggregate, when readable: later events wait behind it. */
      seq: number | undefined;
    }
  | { kind: "skip"; reason: "not-insert" | "not-outbox" | "not-pending" };

export type EventParsed = Extract<Parsed, { kind: "event" }>;

export interface RelayBatch {
  readonly records: ReadonlyArray<DynamoDBRecord>;
  readonly parsed: ReadonlyArray<Parsed>;
  readonly tableName: string;
  readonly failedAt: Set<number>;
}

/**
 * Keeps the INSERTs of pending outbox events. Anything else is skipped (the event-source filter
 * normally keeps it away); a non-outbox INSERT is logged as NotAnOutboxItemError, because it means
 * the filter is missing. An outbox item that cannot be read is to be parked.
 */
export function parseRelayRecord(record: DynamoDBRecord, telemetry: Telemetry | undefined): Parsed {
  if (record.eventName !== "INSERT") return { kind: "skip", reason: "not-insert" };
  const lambdaImage = record.dynamodb?.NewImage;
  if (!lambdaImage) {
    const keys = record.dynamodb?.Keys;
    if (keys && isOutboxKey(fromLambdaImage(keys))) {
      throw new StreamViewTypeError(
        "the stream carries no new images: set StreamViewType to NEW_IMAGE or NEW_AND_OLD_IMAGES",
      );
    }
    return { kind: "skip", reason: "not-outbox" };
  }
  const image = fromLambdaImage(lambdaImage);
  if (!isOutboxKey(image)) {
    const error = new NotAnOutboxItemError(
      "an INSERT of a non-outbox item reached the relay; check the event-source filter (OUTBOX_STREAM_FILTER_PATTERN)",
    );
    // Logged under the error's name (docs/outbox.md), so a search for it finds the missing filter.
    telemetry?.logger.error(`${error.name}: ${error.message}`, {
      error: describeError(error),
      sequenceNumber: record.dynamodb?.SequenceNumber,
    });
    return { kind: "skip", reason: "not-outbox" };
  }
  if (image[A.pending] === undefined) return { kind: "skip", reason: "not-pending" };
  const pk = image[A.pk]?.S;
  const sk = image[A.sk]?.S;
  const key = pk !== undefined && sk !== undefined ? { pk, sk } : undefined;
  try {
    return { kind: "event", event: parseOutboxItem(image), image };
  } catch (error) {
    return { kind: "park", error, image: lambdaImage, key, seq: positionOf(image)?.seq };
  }
}

/** The partial response: the stream is retried from the first failed record. */
export function relayAnswer(b: RelayBatch): DynamoDBBatchResponse {
  if (b.failedAt.size === 0) return { batchItemFailures: [] };
  const sequenceNumber = b.records[Math.min(...b.failedAt)]?.dynamodb?.SequenceNumber;
  // No sequence number cannot be checkpointed: fail the whole batch instead.
  if (!sequenceNumber) throw new Error("outbox relay: a failed record has no SequenceNumber");
  return { batchItemFailures: [{ itemIdentifier: sequenceNumber }] };
}
