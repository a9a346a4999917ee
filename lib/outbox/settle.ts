import {
  type AttributeValue,
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
  type WriteRequest,
} from "@aws-sdk/client-dynamodb";
import type { MessageAttributeValue, SQSClient } from "@aws-sdk/client-sqs";
import type { AttributeValue as LambdaAttributeValue } from "aws-lambda";
import { contextToHeaders, failureContext } from "../core/failureContext.ts";
import { DYNAMODB_BATCH_LIMIT, StatementBatcher } from "../dedup/statementBatcher.ts";
import { SQS_LIMITS } from "../sqs/sqsLimits.ts";
import { pendingShard } from "./outboxEvent.ts";
import { sendToParkingQueue } from "./parkingQueue.ts";
import { OUTBOX_ATTR as A, OUTBOX_DEFAULTS } from "./schema.ts";

/**
 * What happens to an outbox item after a publish attempt: cleared (published) or parked
 * (permanently failed). Shared by the relay and the sweeper.
 */

/** The Lambda event's attribute values (binary as base64) → SDK attribute values. */
export function fromLambdaAttributeValue(v: LambdaAttributeValue): AttributeValue {
  if (v.S !== undefined) return { S: v.S };
  if (v.N !== undefined) return { N: v.N };
  if (v.B !== undefined) return { B: Buffer.from(v.B, "base64") };
  if (v.BOOL !== undefined) return { BOOL: v.BOOL };
  if (v.NULL !== undefined) return { NULL: v.NULL };
  if (v.SS !== undefined) return { SS: v.SS };
  if (v.NS !== undefined) return { NS: v.NS };
  if (v.BS !== undefined) return { BS: v.BS.map((b) => Buffer.from(b, "base64")) };
  if (v.L !== undefined) return { L: v.L.map(fromLambdaAttributeValue) };
  if (v.M !== undefined) return { M: fromLambdaImage(v.M) };
  return { NULL: true };
}

export function fromLambdaImage(image: Record<string, LambdaAttributeValue>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([k, v]) => [k, fromLambdaAttributeValue(v)]));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A published event's TTL: its retention starts now that it is out (older items carry one already). */
function publishedExpiry(item: Record<string, AttributeValue>, now: number): AttributeValue {
  const retention = Number(item[A.retentionSeconds]?.N ?? OUTBOX_DEFAULTS.eventRetentionSeconds);
  return item[A.expiresAt] ?? { N: String(Math.floor(now / 1000) + retention) };
}

/** `pk` NUL `sk`: an item's key as one string (what `clearPending` reports failed clears by). */
export function eventKeyOf(item: Record<string, AttributeValue>): string {
  return `${item[A.pk]?.S ?? ""}\u0000${item[A.sk]?.S ?? ""}`;
}

/**
 * Clears `pending` (and `pendingSince`) on published events, so they leave the sparse GSI.
 *
 * BatchWriteItem puts of the full item without the marker, 25 items a call: 0.04 calls per event
 * instead of one UpdateItem each. This is safe because outbox items are immutable apart from these
 * markers, and the full image is at hand (the stream's NEW_IMAGE, or the GSI's ALL projection). The
 * put shows up in the stream as a MODIFY, which the relay's filter ignores. If an item were ever
 * re-created after its TTL deletion, it would come back without `pending`: never republished.
 *
 * Unprocessed items are retried a few times; what still fails is returned (not thrown): the events
 * are published, and the sweeper will republish them later (a duplicate with the same event id).
 * Not fenced: a put landing after the item changed (a requeue or a park by the sweeper, between the
 * relay's publish and its clear) undoes that change; `clearPendingFenced` cannot, at a cost.
 */
export async function clearPending(
  client: DynamoDBClient,
  tableName: string,
  items: ReadonlyArray<Record<string, AttributeValue>>,
  publishedBy: "relay" | "sweeper",
  now: number,
): Promise<{ cleared: number; failed: number; calls: number; failedKeys: Set<string> }> {
  let calls = 0;
  let failed = 0;
  const failedKeys = new Set<string>();
  const requests: WriteRequest[] = items.map((item) => {
    const { [A.pending]: _p, [A.pendingSince]: _s, ...rest } = item;
    return {
      PutRequest: {
        Item: {
          ...rest,
          [A.expiresAt]: publishedExpiry(item, now),
          [A.publishedAt]: { N: String(now) },
          [A.publishedBy]: { S: publishedBy },
        },
      },
    };
  });
  const chunks: WriteRequest[][] = [];
  for (let i = 0; i < requests.length; i += DYNAMODB_BATCH_LIMIT)
    chunks.push(requests.slice(i, i + DYNAMODB_BATCH_LIMIT));
  await Promise.all(
    chunks.map(async (chunk) => {
      let todo = chunk;
      for (let attempt = 0; attempt < 5 && todo.length > 0; attempt++) {
        if (attempt > 0) await sleep(Math.min(1000, 50 * 2 ** attempt * Math.random()));
        try {
          calls++;
          const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: todo } }));
          todo = out.UnprocessedItems?.[tableName] ?? [];
        } catch {
          // The SDK already retried this call; try again in the next attempt.
        }
      }
      failed += todo.length;
      for (const r of todo) failedKeys.add(eventKeyOf(r.PutRequest?.Item ?? {}));
    }),
  );
  return { cleared: items.length - failed, failed, calls, failedKeys };
}

/**
 * Clears `pending` (and `pendingSince`) on published events, so they leave the sparse GSI, and
 * stamps `publishedAt` / `publishedBy` and the TTL.
 *
 * One PartiQL UPDATE per event, fenced on the `pendingSince` of the image that was published, and
 * coalesced 25 to a BatchExecuteStatement (0.04 calls per event; each statement costs what an
 * UpdateItem would). The fence makes a late clear harmless: an event requeued since
 * (`requeueParked`, a new `pendingSince`), parked by the other publisher, or already deleted by
 * its TTL is left as it is (`superseded`), where `clearPending`'s put of the old image would undo
 * the requeue, erase the park, or re-create the item. The sweeper clears this way: it works on old
 * events, the ones operators park and requeue. The relay keeps `clearPending` on its hot path:
 * on DynamoDB Local these statements took 3-4× as long as the puts, and the relay's throughput
 * fell to a sixth (FIFO, Kafka) in `npm run bench -- --only outbox`.
 *
 * What still fails after the batcher's retries is returned (not thrown): the events are
 * published, and the sweeper will republish them later (a duplicate with the same event id).
 */
export async function clearPendingFenced(
  client: DynamoDBClient,
  tableName: string,
  items: ReadonlyArray<Record<string, AttributeValue>>,
  publishedBy: "relay" | "sweeper",
  now: number,
): Promise<{ cleared: number; superseded: number; failed: number }> {
  const batcher = new StatementBatcher(client, {}, 0);
  const results = await Promise.all(
    items.map((item) => {
      const pk = item[A.pk];
      const sk = item[A.sk];
      if (!pk || !sk) return Promise.resolve("failed" as const);
      const since = item[A.pendingSince];
      return batcher
        .execute({
          item: `${pk.S}\u0000${sk.S}`,
          statement: `UPDATE "${tableName}" REMOVE "${A.pending}" REMOVE "${A.pendingSince}" SET "${A.expiresAt}" = ? SET "${A.publishedAt}" = ? SET "${A.publishedBy}" = ? WHERE "${A.pk}" = ? AND "${A.sk}" = ? AND ${since ? `"${A.pendingSince}" = ?` : `"${A.pending}" IS NOT MISSING`}`,
          parameters: [
            publishedExpiry(item, now),
            { N: String(now) },
            { S: publishedBy },
            pk,
            sk,
            ...(since ? [since] : []),
          ],
        })
        .then(
          (r) => (r.ok ? "cleared" : r.code === "ConditionalCheckFailed" ? "superseded" : "failed"),
          () => "failed" as const,
        );
    }),
  );
  const count = (what: string) => results.filter((r) => r === what).length;
  return { cleared: count("cleared"), superseded: count("superseded"), failed: count("failed") };
}

export interface ParkInput {
  readonly key: { pk: string; sk: string } | undefined;
  /** The image as it arrived (Lambda JSON or SDK shape), carried in full so the event can be replayed. */
  readonly image: unknown;
  readonly eventId: string | undefined;
  readonly error: unknown;
  readonly source: string;
  readonly consumer: string;
}

export interface ParkingOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly sqs: () => SQSClient;
  /** Parked events are sent here too, with their failure context. @default none: parked in the table only */
  readonly parkingQueueUrl: string | undefined;
  /** How long a parked item stays in the table (its TTL is pushed out). @default 14 days */
  readonly parkedRetentionSeconds?: number;
  readonly now: number;
}

/**
 * Parks a permanently failing event: (1) to the parking queue if configured, with the failure
 * context (`x-last-error`, `x-consumer`, `x-message-id`, …) and the whole item as the body; then
 * (2) in the table: `pending` removed, `parkedAt` and `lastError` set, TTL pushed out. The item stays
 * queryable and `requeueParked` puts it back in line after a fix. Throws if either step fails (the
 * caller then reports the record as failed: nothing is acked).
 */
export async function park(input: ParkInput, options: ParkingOptions): Promise<void> {
  const context = failureContext({
    error: input.error,
    messageId: input.eventId ?? "unknown",
    consumer: input.consumer,
    retryCount: 0,
    now: new Date(options.now),
    originalTopic: input.source,
  });
  const headers = contextToHeaders(context);
  if (options.parkingQueueUrl) {
    const attributes: Record<string, MessageAttributeValue> = {
      "x-failure-context": { DataType: "String", StringValue: JSON.stringify(headers) },
      ...(input.eventId ? { "message-id": { DataType: "String", StringValue: input.eventId } } : {}),
    };
    const send = (body: string) =>
      sendToParkingQueue(
        options.sqs(),
        options.parkingQueueUrl!,
        body,
        attributes,
        input.key?.pk,
        input.eventId,
      );
    const full = JSON.stringify({
      kind: "outbox-parked",
      context: headers,
      key: input.key,
      item: input.image,
    });
    // An event rejected for its size may not fit the parking queue either (SQS takes 1 MiB; a queue
    // may be set lower; the image is JSON inside JSON). Then the queue gets a reference: keys and
    // context, no image. Nothing is lost: the item stays in the table, marked parked, with its TTL
    // pushed out, and `requeueParked` works from there. Without this, a failed parking would fail
    // the record and block its stream shard until the mapping gave up.
    const sizeOf = (body: string) =>
      Buffer.byteLength(body, "utf8") + Buffer.byteLength(JSON.stringify(attributes));
    const compact = () =>
      JSON.stringify({
        kind: "outbox-parked-ref",
        context: headers,
        key: input.key,
        itemOmitted: `the item (${Buffer.byteLength(full, "utf8")} bytes as JSON) is too large for the parking queue; it stays in the table with parkedAt set`,
      });
    if (input.key && sizeOf(full) > SQS_LIMITS.maxMessageBytes) await send(compact());
    else {
      try {
        await send(full);
      } catch (error) {
        if (!input.key || !isMessageTooLarge(error)) throw error;
        await send(compact());
      }
    }
  }
  if (!input.key) return;
  const retention = options.parkedRetentionSeconds ?? 14 * 24 * 3600;
  try {
    await options.client.send(
      new UpdateItemCommand({
        TableName: options.tableName,
        Key: { [A.pk]: { S: input.key.pk }, [A.sk]: { S: input.key.sk } },
        UpdateExpression: "SET #parkedAt = :now, #lastError = :err, #exp = :exp REMOVE #pending, #since",
        ConditionExpression: "attribute_exists(#pk)",
        ExpressionAttributeNames: {
          "#pk": A.pk,
          "#parkedAt": A.parkedAt,
          "#lastError": A.lastError,
          "#exp": A.expiresAt,
          "#pending": A.pending,
          "#since": A.pendingSince,
        },
        ExpressionAttributeValues: {
          ":now": { N: String(options.now) },
          ":err": { S: headers["x-last-error"] ?? "unknown" },
          ":exp": { N: String(Math.floor(options.now / 1000) + retention) },
        },
      }),
    );
  } catch (error) {
    // Gone already (TTL): nothing left to mark; the parking queue (if any) has it.
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

/** SQS's answer to a message over the queue's MaximumMessageSize (InvalidParameterValue "must be shorter than"). */
function isMessageTooLarge(error: unknown): boolean {
  const e = error as { name?: string; message?: string } | null;
  return (
    /MessageTooLong|InvalidParameterValue|BatchRequestTooLong/.test(e?.name ?? "") &&
    /shorter than|too long|too large|size/i.test(e?.message ?? "")
  );
}

/**
 * Replay after a fix: puts a parked (or published) event back in line by setting `pending` again.
 * The stream does not relay it (it is a MODIFY); the sweeper republishes it once it has been
 * pending for minAgeMs (`pendingSince` @default now).
 * `destination` optionally re-routes it. Returns false if the item no longer exists.
 */
export async function requeueParked(
  client: DynamoDBClient,
  tableName: string,
  key: { pk: string; sk: string },
  options: {
    /** The pending-index shard. @default the aggregate's (from the key) among `pendingShards` */
    shard?: string;
    /** Must equal the writers' `pendingShards`. @default OUTBOX_DEFAULTS.pendingShards */
    pendingShards?: number;
    pendingSince?: number;
    destination?: string;
    retentionSeconds?: number;
    now?: number;
  },
): Promise<boolean> {
  const now = options.now ?? Date.now();
  const [, aggregateType = "", aggregateId = ""] = /^OUTBOX#([^#]*)#(.*)$/.exec(key.pk) ?? [];
  const shard =
    options.shard ??
    pendingShard(aggregateType, aggregateId, options.pendingShards ?? OUTBOX_DEFAULTS.pendingShards);
  // The item's own retention stays unless the caller gives one.
  const retentionSet =
    options.retentionSeconds !== undefined ? "#ret = :ret" : "#ret = if_not_exists(#ret, :ret)";
  const retention = options.retentionSeconds ?? OUTBOX_DEFAULTS.eventRetentionSeconds;
  try {
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { [A.pk]: { S: key.pk }, [A.sk]: { S: key.sk } },
        // Pending again, so no TTL until it is published again (clearPending restarts it).
        UpdateExpression: `SET #pending = :shard, #since = :since, ${retentionSet}${options.destination ? ", #dest = :dest" : ""} REMOVE #parkedAt, #publishedAt, #exp`,
        ConditionExpression: "attribute_exists(#pk)",
        ExpressionAttributeNames: {
          "#pk": A.pk,
          "#pending": A.pending,
          "#since": A.pendingSince,
          "#exp": A.expiresAt,
          "#ret": A.retentionSeconds,
          "#parkedAt": A.parkedAt,
          "#publishedAt": A.publishedAt,
          ...(options.destination ? { "#dest": A.destination } : {}),
        },
        ExpressionAttributeValues: {
          ":shard": { S: shard },
          ":since": { N: String(options.pendingSince ?? now) },
          ":ret": { N: String(retention) },
          ...(options.destination ? { ":dest": { S: options.destination } } : {}),
        },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/**
 * Gives up on a parked event for good, so the later events of its aggregate may go out (a parked
 * event holds them back: order per aggregate). The item loses `parkedAt`, gets `discardedAt`, and
 * keeps its TTL; the parking queue's copy (if any) is the record of what was given up. Returns false
 * if the item is gone or is not parked.
 */
export async function discardParked(
  client: DynamoDBClient,
  tableName: string,
  key: { pk: string; sk: string },
  options: { now?: number } = {},
): Promise<boolean> {
  try {
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { [A.pk]: { S: key.pk }, [A.sk]: { S: key.sk } },
        UpdateExpression: "SET #discardedAt = :now REMOVE #parkedAt",
        ConditionExpression: "attribute_exists(#parkedAt)",
        ExpressionAttributeNames: { "#parkedAt": A.parkedAt, "#discardedAt": A.discardedAt },
        ExpressionAttributeValues: { ":now": { N: String(options.now ?? Date.now()) } },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
