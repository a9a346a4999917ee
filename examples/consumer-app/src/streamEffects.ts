// What the stream consumers of this app do with a record: count its effect, after the faults a
// test asks for by `fault`. test/package/consumerApp.test.ts counts the effects per record id.
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";

/** A record as both stream consumers read it: an id, and the fault its first attempt meets. */
export interface StreamWork {
  readonly id: string;
  /** `transient-once`: the first attempt throws; `crash-once`: the first attempt exits the process. */
  readonly fault?: "transient-once" | "crash-once";
}

const ddb = new DynamoDBClient({});
const table = () => process.env.EFFECTS_TABLE_NAME;

/** True once per id: the first caller writes a marker item, every later one meets it. */
async function firstAttempt(id: string): Promise<boolean> {
  try {
    await ddb.send(
      new PutItemCommand({
        TableName: table(),
        Item: { pk: { S: `MARKER#${id}` } },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/**
 * The effect of one record: ADD 1 to its counter, which is not idempotent by nature, so a record
 * that ran twice counts 2. Before it, the fault the record asks for, on its first attempt only.
 */
export async function countEffect(work: StreamWork): Promise<void> {
  if (work.fault && (await firstAttempt(work.id))) {
    if (work.fault === "crash-once") process.exit(1); // the runtime dies mid-batch, as on an OOM
    throw new Error(`transient failure of ${work.id}`); // handed back: a partial batch response
  }
  await ddb.send(
    new UpdateItemCommand({
      TableName: table(),
      Key: { pk: { S: `EFFECT#${work.id}` } },
      UpdateExpression: "ADD effects :one",
      ExpressionAttributeValues: { ":one": { N: "1" } },
    }),
  );
}
