/**
 * The Kinesis benchmark's workload and its stand-in for Lambda's Kinesis event source mapping.
 *
 * The workload is the SQS benchmark's (`workload()` of bench/sqsIdempotency.ts: the same seeded
 * keys, `duplicateRate` of them repeating a recent key, about half in the same batch), put in
 * Lambda's Kinesis event shape (Lambda developer guide, "Using Lambda with Kinesis Data Streams",
 * example event): one shard, `eventID` `shardId-000000000000:<sequenceNumber>`, increasing
 * sequence numbers, `data` the JSON body in base64, and a partition key per customer (a repeated
 * order keeps its partition key, as a producer's retry does).
 */
import type { Context, KinesisStreamEvent, KinesisStreamRecord } from "aws-lambda";
import { type SqsBenchOptions, workload } from "./sqsIdempotency.ts";

export const BENCH_STREAM_ARN = "arn:aws:kinesis:us-east-1:000000000000:stream/bench-orders";
export const BENCH_SHARD_ID = "shardId-000000000000";

/** Distinct partition keys of the workload: the lanes `ordering: "key"` can run side by side. */
export const PARTITION_KEYS = 32;

/** A 56-digit sequence number, as Kinesis writes them, the `n`-th of the shard. */
export const sequenceNumber = (n: number): string => `4959${String(n).padStart(52, "0")}`;

/** The partition key of an order: one of `PARTITION_KEYS` customers, the same for every copy. */
export function partitionKeyOf(orderId: string): string {
  let h = 0;
  for (let i = 0; i < orderId.length; i++) h = (Math.imul(h, 31) + orderId.charCodeAt(i)) | 0;
  return `customer-${(h >>> 0) % PARTITION_KEYS}`;
}

/** One Kinesis record of the bench's shard, the `n`-th, carrying `body`. */
export function kinesisRecord(n: number, body: { orderId: string }): KinesisStreamRecord {
  const seq = sequenceNumber(n);
  return {
    kinesis: {
      kinesisSchemaVersion: "1.0",
      partitionKey: partitionKeyOf(body.orderId),
      sequenceNumber: seq,
      data: Buffer.from(JSON.stringify(body)).toString("base64"),
      approximateArrivalTimestamp: 1_764_800_000 + n / 1000,
    },
    eventSource: "aws:kinesis",
    eventVersion: "1.0",
    eventID: `${BENCH_SHARD_ID}:${seq}`,
    eventName: "aws:kinesis:record",
    invokeIdentityArn: "arn:aws:iam::000000000000:role/bench-consumer",
    awsRegion: "us-east-1",
    eventSourceARN: BENCH_STREAM_ARN,
  };
}

/** The SQS benchmark's seeded workload as Kinesis batches of one shard; `unique` = distinct orders. */
export function kinesisWorkload(o: SqsBenchOptions): { events: KinesisStreamEvent[]; unique: number } {
  const { events, unique } = workload(o, "arn:aws:sqs:us-east-1:000000000000:bench-orders", "kinesis");
  let n = 0;
  return {
    events: events.map(({ Records }) => ({
      Records: Records.map((r) => kinesisRecord(++n, JSON.parse(r.body) as { orderId: string })),
    })),
    unique,
  };
}

/** A Lambda handler of Kinesis batches, whichever side. */
export type KinesisHandler = (
  event: KinesisStreamEvent,
  context: Context,
) => Promise<{ batchItemFailures: Array<{ itemIdentifier?: string }> }>;

/** What delivering the batches cost in resends. */
export interface Delivery {
  /** Sequence numbers reported in partial batch responses, over every invocation. */
  reported: number;
  /** Records sent again from a checkpoint (the failed one and all after it). */
  resent: number;
  /** Invocations that threw: Lambda retries the whole batch. */
  thrown: number;
}

/** The most invocations of one batch before the bench gives up (a side that never finishes). */
const MAX_ATTEMPTS = 10;

/**
 * Lambda's mapping for one batch of a shard: invoke; on a partial batch response, checkpoint at the
 * lowest reported sequence number and invoke again with that record and every one after it; on a
 * throw, the whole batch again. Until an answer reports nothing.
 */
export async function deliver(
  handler: KinesisHandler,
  event: KinesisStreamEvent,
  context: Context,
  tally: Delivery,
): Promise<void> {
  let records = event.Records;
  for (let attempt = 1; records.length > 0; attempt++) {
    if (attempt > MAX_ATTEMPTS) throw new Error(`a batch still failed after ${MAX_ATTEMPTS} invocations`);
    let failed: bigint | undefined;
    try {
      const out = await handler({ Records: records }, context);
      tally.reported += out.batchItemFailures.length;
      for (const f of out.batchItemFailures) {
        const seq = BigInt(f.itemIdentifier ?? "0");
        if (failed === undefined || seq < failed) failed = seq;
      }
    } catch {
      tally.thrown++;
      failed = BigInt(records[0]!.kinesis.sequenceNumber);
    }
    if (failed === undefined) return;
    const from = failed;
    records = records.filter((r) => BigInt(r.kinesis.sequenceNumber) >= from);
    tally.resent += records.length;
  }
}
