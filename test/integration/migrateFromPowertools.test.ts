/**
 * Issue 33 item 7: a consumer moves from Powertools (BatchProcessor + makeIdempotent on DynamoDB)
 * to ours, and no order is charged twice across the two. The "before" handler is the example's,
 * on the real Powertools packages; the "after" is the example's config on our consumer
 * (examples/migrate-from-powertools). Every effect is an increment of the order's `charges`, read
 * back from the app table: a message run twice shows as 2.
 *
 * Time is the test's: Powertools runs "two hours ago" under a faked Date where a record must have
 * expired, and our consumer reads a clock the test moves forward when a Powertools lock must have
 * ended. SQS visibility never decides anything: messages are received with a long visibility and
 * made visible again when the test says so.
 */
import {
  type BatchGetItemCommandInput,
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
} from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import type { IdempotencyOptions } from "reliable-consumers";
import { createSqsClient, sqsConsumer } from "reliable-consumers/sqs";
import { invokeFromQueue } from "reliable-consumers-local";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type * as After from "../../examples/migrate-from-powertools/after.ts";
import type * as Before from "../../examples/migrate-from-powertools/before.ts";
import type * as Orders from "../../examples/migrate-from-powertools/orders.ts";
import { powertoolsIdempotencyKey } from "../../lib/dedup/powertoolsRecord.ts";
import { createDedupTable, deleteTable } from "../../local/src/services/dynamodb/dedupTable.ts";
import { lambdaContext } from "../../local/src/services/lambda/lambdaContext.ts";
import { toSqsRecord } from "../../local/src/services/sqs/trigger.ts";
import { names } from "../support/names.ts";
import { createQueueWithDlq, deleteQueues, drainQueue, sendAll, type TestQueue } from "../support/queues.ts";

const name = names(import.meta.url);
const sqs = createSqsClient();
const ddb = new DynamoDBClient({});
const POWERTOOLS_FUNCTION = "orders-v1";
const tables = {
  app: name("app"),
  dedup: name("dedup"),
  powertools: name("powertools"),
  /** A Powertools table with a sort key (`sortKeyAttr`). */
  composite: name("powertools-sk"),
};
const HOUR = 3_600_000;
/** The end of the cut-over window, as the stack would set it: now + Powertools' 1 h window + margin. */
const until = Date.now() + HOUR + 60_000;

let before: typeof Before;
let after: typeof After;
let orders: typeof Orders;
let q: TestQueue;

type Handler = (event: SQSEvent, context: Context) => Promise<unknown>;

/** Every message now visible, received with a visibility long enough that only the test returns it. */
async function receiveAll(): Promise<SQSRecord[]> {
  const records: SQSRecord[] = [];
  for (;;) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: q.url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 900,
        MessageSystemAttributeNames: ["All"],
        MessageAttributeNames: ["All"],
      }),
    );
    if (!out.Messages?.length) return records;
    records.push(...out.Messages.map((m) => toSqsRecord(m, q.arn)));
  }
}

async function inChunks(records: SQSRecord[], send: (chunk: SQSRecord[]) => Promise<unknown>) {
  for (let i = 0; i < records.length; i += 10) await send(records.slice(i, i + 10));
}

/** The retry time has come: the records are visible again (redelivered with a new receipt). */
const makeVisible = (records: SQSRecord[]) =>
  inChunks(records, (chunk) =>
    sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: q.url,
        Entries: chunk.map((r, i) => ({
          Id: String(i),
          ReceiptHandle: r.receiptHandle,
          VisibilityTimeout: 0,
        })),
      }),
    ),
  );

/**
 * Lambda's SQS trigger for one batch: invoke, then delete what succeeded. `ackLost`: nothing is
 * deleted and the batch comes back, as when the function's answer never reached the poller.
 * `atMs`: the function runs with the system clock set to that time (Date only).
 */
async function deliver(
  handler: Handler,
  records: SQSRecord[],
  options: { functionName: string; ackLost?: boolean; atMs?: number },
): Promise<SQSRecord[]> {
  if (options.atMs !== undefined) {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(options.atMs);
  }
  let response: SQSBatchResponse | undefined;
  try {
    response = (await handler({ Records: records }, lambdaContext(options.functionName, 30_000))) as
      | SQSBatchResponse
      | undefined;
  } finally {
    if (options.atMs !== undefined) vi.useRealTimers();
  }
  const failedIds = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
  const failed = records.filter((r) => failedIds.has(r.messageId));
  if (options.ackLost) await makeVisible(records);
  else
    await inChunks(
      records.filter((r) => !failedIds.has(r.messageId)),
      (chunk) =>
        sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: q.url,
            Entries: chunk.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
          }),
        ),
    );
  return failed;
}

const order = (orderId: string, amountCents = 100) => ({ body: JSON.stringify({ orderId, amountCents }) });
const orderIdOf = (r: SQSRecord) => (JSON.parse(r.body) as { orderId: string }).orderId;

/** How many times the order was charged: the effect count. */
async function charges(orderId: string): Promise<number> {
  const out = await ddb.send(
    new GetItemCommand({
      TableName: tables.app,
      Key: { pk: { S: `ORDER#${orderId}` } },
      ConsistentRead: true,
    }),
  );
  return Number(out.Item?.charges?.N ?? 0);
}

const chargesOf = async (ids: string[]) =>
  Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await charges(id)] as const)));

/** Powertools' record for `data` (what its eventKeyJmesPath selected), read by the key ours computes. */
async function powertoolsRecord(data: unknown) {
  const out = await ddb.send(
    new GetItemCommand({
      TableName: tables.powertools,
      Key: { id: { S: powertoolsIdempotencyKey(POWERTOOLS_FUNCTION, data) } },
      ConsistentRead: true,
    }),
  );
  return {
    status: out.Item?.status?.S,
    expiration: Number(out.Item?.expiration?.N ?? Number.NaN),
    inProgressUntil: Number(out.Item?.in_progress_expiration?.N ?? Number.NaN),
  };
}

/**
 * A DynamoDB client for our consumer that counts what it asks of Powertools' table: keys looked
 * up (BatchGetItem), and any other request there (there must be none: the cut-over only reads).
 */
function countedClient() {
  const client = new DynamoDBClient({});
  const reads = { requests: 0, keys: 0, other: 0 };
  /** While set, a look-up in Powertools' table fails as a throttled request would (after the SDK's retries). */
  const fault = { on: false };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as BatchGetItemCommandInput & { TableName?: string };
      const keys = (input.RequestItems?.[tables.powertools] ?? input.RequestItems?.[tables.composite])?.Keys;
      if (context.commandName === "BatchGetItemCommand" && keys) {
        if (fault.on) throw Object.assign(new Error("injected: throttled"), { name: "ThrottlingException" });
        reads.requests++;
        reads.keys += keys.length;
      } else if (input.TableName === tables.powertools || input.TableName === tables.composite) reads.other++;
      return next(args);
    },
    { step: "initialize", name: "countPowertoolsReads" },
  );
  return { client, reads, fault };
}

beforeAll(async () => {
  Object.assign(process.env, {
    APP_TABLE_NAME: tables.app,
    DEDUP_TABLE_NAME: tables.dedup,
    IDEMPOTENCY_TABLE_NAME: tables.powertools,
    // Powertools' key prefix is the function name its persistence layer was built under.
    AWS_LAMBDA_FUNCTION_NAME: POWERTOOLS_FUNCTION,
    POWERTOOLS_TABLE_NAME: tables.powertools,
    POWERTOOLS_KEY_PREFIX: POWERTOOLS_FUNCTION,
    POWERTOOLS_CUTOVER_UNTIL: new Date(until).toISOString(),
  });
  await createDedupTable(ddb, tables.dedup);
  for (const table of [tables.app, tables.powertools]) {
    const key = table === tables.app ? "pk" : "id";
    await ddb.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [{ AttributeName: key, AttributeType: "S" }],
        KeySchema: [{ AttributeName: key, KeyType: "HASH" }],
      }),
    );
  }
  await ddb.send(
    new CreateTableCommand({
      TableName: tables.composite,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        { AttributeName: "id", AttributeType: "S" },
        { AttributeName: "sk", AttributeType: "S" },
      ],
      KeySchema: [
        { AttributeName: "id", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ],
    }),
  );
  q = await createQueueWithDlq(sqs, name("orders"));
  orders = await import("../../examples/migrate-from-powertools/orders.ts");
  before = await import("../../examples/migrate-from-powertools/before.ts");
  after = await import("../../examples/migrate-from-powertools/after.ts");
});

afterAll(async () => {
  await Promise.all(Object.values(tables).map((t) => deleteTable(ddb, t)));
  await deleteQueues(sqs, q);
});

describe("migrating from Powertools (examples/migrate-from-powertools)", () => {
  it("the example as written: what Powertools charged is not charged again by ours", async () => {
    await sendAll(sqs, q.url, [order("e-1"), order("e-2")]);
    await deliver(before.handler, await receiveAll(), { functionName: POWERTOOLS_FUNCTION, ackLost: true });
    expect(await chargesOf(["e-1", "e-2"])).toEqual({ "e-1": 1, "e-2": 1 });

    // The cut-over: ours gets the lost batch again, a resend of e-2 and a new order.
    await sendAll(sqs, q.url, [order("e-2"), order("e-3")]);
    const result = await invokeFromQueue(sqs, after.handler, {
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: "orders-v2",
    });
    expect(result).toMatchObject({ received: 4, deleted: 4, failed: [] });
    expect(await chargesOf(["e-1", "e-2", "e-3"])).toEqual({ "e-1": 1, "e-2": 1, "e-3": 1 });
  });

  it("a failed look-up in Powertools' table runs nothing, and frees the key for the retry", async () => {
    await sendAll(sqs, q.url, [order("f-1"), order("f-2")]);
    await deliver(before.handler, await receiveAll(), { functionName: POWERTOOLS_FUNCTION, ackLost: true });
    const { client, reads, fault } = countedClient();
    const ours = sqsConsumer<Orders.Order>(({ body }) => orders.chargeOrder(body), {
      ...after.config,
      consumer: "orders-faults",
      dynamodbClient: client,
    });
    fault.on = true;
    await sendAll(sqs, q.url, [order("f-3")]);
    const failed = await deliver(ours, await receiveAll(), { functionName: "orders-v2" });
    expect(failed.map(orderIdOf).sort()).toEqual(["f-1", "f-2", "f-3"]);
    expect(await chargesOf(["f-1", "f-2", "f-3"])).toEqual({ "f-1": 1, "f-2": 1, "f-3": 0 });

    // The retry, at once: had the claims been kept, they would answer "in progress" for 30 s.
    fault.on = false;
    await makeVisible(failed);
    expect(await deliver(ours, await receiveAll(), { functionName: "orders-v2" })).toEqual([]);
    expect(await chargesOf(["f-1", "f-2", "f-3"])).toEqual({ "f-1": 1, "f-2": 1, "f-3": 1 });
    expect(reads.keys).toBe(3);
  });

  it("cut-over: redeliveries, resends, a crashed Powertools run, an expired record and two concurrent batches each charge once", {
    timeout: 180_000,
  }, async () => {
    // ── Powertools, two hours ago: o-old is charged, its record (1 h) has expired since.
    await sendAll(sqs, q.url, [order("o-old")]);
    await deliver(before.handler, await receiveAll(), {
      functionName: POWERTOOLS_FUNCTION,
      atMs: Date.now() - 2 * HOUR,
    });

    // ── Powertools, now: o-1..o-3 are charged, but the answer is lost and they come back.
    await sendAll(sqs, q.url, [order("o-1"), order("o-2"), order("o-3")]);
    await deliver(before.handler, await receiveAll(), { functionName: POWERTOOLS_FUNCTION, ackLost: true });

    // ── Powertools crashes on o-crash: its lock is written, the charge never lands (the
    // function is stopped while the charge's request is out; Lambda would time it out).
    let armed = true;
    let crashed!: () => void;
    const reachedCharge = new Promise<void>((resolve) => (crashed = resolve));
    orders.ddb.middlewareStack.add(
      (next) => async (args) => {
        if (armed && (args.input as UpdateItemCommandInput).Key?.pk?.S === "ORDER#o-crash") {
          crashed();
          return new Promise<never>(() => {});
        }
        return next(args);
      },
      { step: "initialize", name: "crashOnCharge" },
    );
    await sendAll(sqs, q.url, [order("o-crash")]);
    const crashBatch = await receiveAll();
    void before.handler({ Records: crashBatch }, lambdaContext(POWERTOOLS_FUNCTION, 60_000)).catch(() => {});
    await reachedCharge;
    armed = false;
    await makeVisible(crashBatch);

    // What Powertools left, read by the keys ours computes.
    for (const id of ["o-1", "o-2", "o-3"]) expect((await powertoolsRecord(id)).status).toBe("COMPLETED");
    const lock = await powertoolsRecord("o-crash");
    expect(lock.status).toBe("INPROGRESS");
    expect(lock.inProgressUntil).toBeGreaterThan(Date.now());
    const old = await powertoolsRecord("o-old");
    expect(old.status).toBe("COMPLETED");
    expect(old.expiration * 1000).toBeLessThan(Date.now());
    expect(await chargesOf(["o-old", "o-1", "o-2", "o-3", "o-crash"])).toEqual({
      "o-old": 1,
      "o-1": 1,
      "o-2": 1,
      "o-3": 1,
      "o-crash": 0,
    });

    // ── The cut-over, to ours (the example's config, on the test's clock and a counted client).
    let offsetMs = 0;
    const clock = () => Date.now() + offsetMs;
    const { client, reads } = countedClient();
    const ours = sqsConsumer<Orders.Order>(({ body }) => orders.chargeOrder(body), {
      ...after.config,
      dynamodbClient: client,
      now: clock,
      idempotency: { ...(after.config.idempotency as IdempotencyOptions), now: clock },
    });
    // Resends of o-2 and o-3 (new message ids), o-old resent after Powertools' window, o-4 twice, o-5.
    await sendAll(sqs, q.url, [
      order("o-2"),
      order("o-3"),
      order("o-old"),
      order("o-4"),
      order("o-4"),
      order("o-5"),
    ]);
    const queued = await receiveAll();
    expect(queued).toHaveLength(10);
    // Two batches at once in one container, the copies of o-2, o-3 and o-4 split between them.
    const seen = new Set<string>();
    const [first, second] = [[], []] as [SQSRecord[], SQSRecord[]];
    for (const r of queued) {
      (seen.has(orderIdOf(r)) ? second : first).push(r);
      seen.add(orderIdOf(r));
    }
    expect(second.map(orderIdOf).sort()).toEqual(["o-2", "o-3", "o-4"]);
    const failed = (
      await Promise.all([first, second].map((batch) => deliver(ours, batch, { functionName: "orders-v2" })))
    ).flat();

    // Powertools' lock on o-crash is live: ours neither runs it nor acks it.
    expect(failed.map(orderIdOf)).toContain("o-crash");
    expect(await chargesOf(["o-1", "o-2", "o-3", "o-crash", "o-old", "o-4", "o-5"])).toEqual({
      "o-1": 1,
      "o-2": 1,
      "o-3": 1,
      "o-crash": 0,
      "o-old": 2, // Powertools' record had expired: outside Powertools' own window too
      "o-4": 1,
      "o-5": 1,
    });
    // One look-up per key ours claimed first; the copy racing it in the other batch read nothing.
    expect(reads.keys).toBe(7);

    // ── Two minutes on: the crashed run's lock (60 s) has ended, and ours takes the key over.
    offsetMs = 2 * 60_000;
    await makeVisible(failed);
    const retried = await receiveAll();
    expect(retried.map(orderIdOf)).toContain("o-crash");
    expect(await deliver(ours, retried, { functionName: "orders-v2" })).toEqual([]);
    expect(await charges("o-crash")).toBe(1);
    // Only o-crash was looked up again (ours gave its claim back); the held copies were
    // answered as duplicates by our own table.
    expect(reads.keys).toBe(8);

    // ── After the window: ours alone decides, with no request to Powertools' table.
    offsetMs = until - Date.now() + 1000;
    const readsBefore = { ...reads };
    await sendAll(sqs, q.url, [order("o-1"), order("o-6")]);
    expect(await deliver(ours, await receiveAll(), { functionName: "orders-v2" })).toEqual([]);
    expect(await chargesOf(["o-1", "o-6"])).toEqual({ "o-1": 1, "o-6": 1 });
    expect(reads).toEqual(readsBefore);
    expect(reads.other).toBe(0);

    expect(await receiveAll()).toEqual([]);
    expect(await drainQueue(sqs, q.dlqUrl)).toEqual([]);
  });

  it("keyed on messageId: a redelivery is recognised, a resend (new message id) is not, as under Powertools", async () => {
    const { IdempotencyConfig, makeIdempotent } = await import("@aws-lambda-powertools/idempotency");
    const { DynamoDBPersistenceLayer } = await import("@aws-lambda-powertools/idempotency/dynamodb");
    const { BatchProcessor, EventType, processPartialResponse } = await import(
      "@aws-lambda-powertools/batch"
    );
    const config = new IdempotencyConfig({ eventKeyJmesPath: "messageId" });
    const chargeOnce = makeIdempotent(
      async (record: SQSRecord) => orders.chargeOrder(JSON.parse(record.body) as Orders.Order),
      { persistenceStore: new DynamoDBPersistenceLayer({ tableName: tables.powertools }), config },
    );
    const processor = new BatchProcessor(EventType.SQS);
    const powertools: Handler = async (event, context) => {
      config.registerLambdaContext(context);
      return processPartialResponse(event, chargeOnce, processor, { context });
    };

    await sendAll(sqs, q.url, [order("m-1"), order("m-2")]);
    const batch = await receiveAll();
    await deliver(powertools, batch, { functionName: POWERTOOLS_FUNCTION, ackLost: true });
    expect((await powertoolsRecord(batch[0]!.messageId)).status).toBe("COMPLETED");

    const { client, reads } = countedClient();
    const ours = sqsConsumer<Orders.Order>(({ body }) => orders.chargeOrder(body), {
      ...after.messageIdConfig,
      consumer: "orders-by-message-id",
      dynamodbClient: client,
    });
    await sendAll(sqs, q.url, [order("m-1")]);
    expect(await deliver(ours, await receiveAll(), { functionName: "orders-v2" })).toEqual([]);
    expect(reads.keys).toBe(3);
    expect(await chargesOf(["m-1", "m-2"])).toEqual({ "m-1": 2, "m-2": 1 });
  });

  it("a Powertools table with a sort key (sortKeyAttr): read under Powertools' static partition key", async () => {
    const { IdempotencyConfig, makeIdempotent } = await import("@aws-lambda-powertools/idempotency");
    const { DynamoDBPersistenceLayer } = await import("@aws-lambda-powertools/idempotency/dynamodb");
    const { BatchProcessor, EventType, processPartialResponse } = await import(
      "@aws-lambda-powertools/batch"
    );
    const config = new IdempotencyConfig({ eventKeyJmesPath: "powertools_json(body).orderId" });
    const persistenceStore = new DynamoDBPersistenceLayer({ tableName: tables.composite, sortKeyAttr: "sk" });
    const chargeOnce = makeIdempotent(
      async (record: SQSRecord) => orders.chargeOrder(JSON.parse(record.body) as Orders.Order),
      { persistenceStore, config },
    );
    const processor = new BatchProcessor(EventType.SQS);
    const powertools: Handler = async (event, context) => {
      config.registerLambdaContext(context);
      return processPartialResponse(event, chargeOnce, processor, { context });
    };
    await sendAll(sqs, q.url, [order("s-1")]);
    await deliver(powertools, await receiveAll(), { functionName: POWERTOOLS_FUNCTION, ackLost: true });

    const { client, reads } = countedClient();
    const cutover = (after.config.idempotency as IdempotencyOptions).powertoolsCutover!;
    const ours = sqsConsumer<Orders.Order>(({ body }) => orders.chargeOrder(body), {
      ...after.config,
      consumer: "orders-sort-key",
      dynamodbClient: client,
      idempotency: { powertoolsCutover: { ...cutover, tableName: tables.composite, sortKeyAttr: "sk" } },
    });
    await sendAll(sqs, q.url, [order("s-2")]);
    expect(await deliver(ours, await receiveAll(), { functionName: "orders-v2" })).toEqual([]);
    expect(await chargesOf(["s-1", "s-2"])).toEqual({ "s-1": 1, "s-2": 1 });
    expect(reads).toEqual({ requests: expect.any(Number), keys: 2, other: 0 });
  });
});
