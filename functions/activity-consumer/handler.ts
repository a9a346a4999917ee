import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { createTelemetry } from "reliable-consumers";
import { kinesisConsumer } from "reliable-consumers/kinesis";
import { createInboxOutbox, withUnitOfWork } from "reliable-consumers/outbox";
import { ACTIVITY_HEAD_SK, Activity, activityPk, activitySk } from "./activity.ts";

/** The customer's head moved under this record (another write of its key): retried, not parked. */
export class ActivityHeadMovedError extends Error {
  override name = "ActivityHeadMovedError";
}

const telemetry = createTelemetry({ serviceName: "activity-consumer" });
const ddb = new DynamoDBClient({});
const tableName = process.env.APP_TABLE_NAME ?? "app";

export const inbox = createInboxOutbox({
  tableName,
  scope: process.env.INBOX_SCOPE ?? "activity-consumer",
  client: ddb,
  telemetry,
});

/**
 * Customer activity from the order-activity Kinesis stream, applied as one unit of work per record:
 *   1. the inbox marker INBOX#activity-consumer#<activityId> (only if absent: the dedup mark),
 *   2. the customer's head ACTIVITY#<customerId>/HEAD: `lastSeq` set to the record's seq and an
 *      atomic counter `applied` incremented, only if `lastSeq` is still what was read (optimistic),
 *   3. the record's own item ACTIVITY#<customerId>/SEQ#<seq>: an atomic counter `applied` and
 *      `prevSeq`, the head's `lastSeq` it followed.
 * All or nothing, so a record's effect is there once or not at all. `applied` above 1 on a record
 * item would be a duplicate effect, and a `prevSeq` other than the seq of the customer's previous
 * applied record an order violation: the chaos suite checks both on the stored items.
 *
 * `ordering: "key"`: order matters per customer (the partition key) only, so customers of one shard
 * run side by side, each in order, and a failing record holds back its own customer alone.
 * Environment: APP_TABLE_NAME, DLQ_URL (the trigger's parking queue), INBOX_SCOPE (@default activity-consumer).
 */
export const handler = kinesisConsumer<Activity>(
  withUnitOfWork<Activity, void>(inbox, async (uow) => {
    const a = uow.envelope.body;
    const head = await ddb.send(
      new GetItemCommand({
        TableName: tableName,
        Key: { pk: { S: activityPk(a.customerId) }, sk: { S: ACTIVITY_HEAD_SK } },
        ConsistentRead: true,
      }),
    );
    const prevSeq = head.Item?.lastSeq?.N === undefined ? 0 : Number(head.Item.lastSeq.N);
    uow.update(
      {
        Key: { pk: activityPk(a.customerId), sk: ACTIVITY_HEAD_SK },
        UpdateExpression: "SET lastSeq = :seq ADD applied :one",
        ConditionExpression: prevSeq === 0 ? "attribute_not_exists(lastSeq)" : "lastSeq = :prev",
        ExpressionAttributeValues: {
          ":seq": a.seq,
          ":one": 1,
          ...(prevSeq === 0 ? {} : { ":prev": prevSeq }),
        },
      },
      // A transient error (retried in order), not a business failure to park.
      {
        onConditionFailed: () => new ActivityHeadMovedError(`head of ${a.customerId} moved past ${prevSeq}`),
      },
    );
    uow.update({
      Key: { pk: activityPk(a.customerId), sk: activitySk(a.seq) },
      UpdateExpression: "SET prevSeq = :prev, activityId = :id, kind = :kind ADD applied :one",
      ExpressionAttributeValues: { ":prev": prevSeq, ":id": a.activityId, ":kind": a.kind, ":one": 1 },
    });
  }),
  { schema: Activity, key: (a) => a.activityId, idempotency: false, ordering: "key", telemetry },
);
