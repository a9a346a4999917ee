import { setTimeout as sleep } from "node:timers/promises";
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import {
  DescribeStreamSummaryCommand,
  type KinesisClient,
  ListShardsCommand,
  MergeShardsCommand,
  PutRecordsCommand,
  type PutRecordsResultEntry,
  type Shard,
  SplitShardCommand,
} from "@aws-sdk/client-kinesis";
import type { Message } from "@aws-sdk/client-sqs";
import type { ChaosService } from "./chaosService.ts";
import { parkedContextOf } from "./invariants.ts";
import { scanTable } from "./storedState.ts";

/**
 * The Kinesis side of the chaos suite: producers of customer activity on the reference service's
 * order-activity stream (activity-consumer), reshards through kinesis-local, and the checks on
 * what was stored (the app table's ACTIVITY# items, the trigger's parking queue).
 */

/** A record put on the stream, where Kinesis put it. */
export interface PutActivity {
  readonly activityId: string;
  readonly customerId: string;
  /** 0 for poison (no place in the customer's sequence). */
  readonly seq: number;
  readonly poison: boolean;
  readonly shardId: string;
  readonly sequenceNumber: string;
}

/** One record to put: its partition key and its data as put. */
export interface ActivityEntry {
  readonly activityId: string;
  readonly customerId: string;
  readonly seq: number;
  readonly data: string;
  readonly poison: boolean;
}

/** A good activity: the customer's `seq`-th event. */
export const activityEntry = (runId: string, customer: number, seq: number): ActivityEntry => {
  const customerId = `${runId}-cust${customer}`;
  const activityId = `${customerId}-a${seq}`;
  return {
    activityId,
    customerId,
    seq,
    data: JSON.stringify({ activityId, customerId, seq, kind: seq % 3 === 0 ? "checkout" : "view" }),
    poison: false,
  };
};

/** Poison on a customer's partition key: malformed JSON or a schema violation, alternately. */
export const poisonEntry = (runId: string, customer: number, n: number): ActivityEntry => {
  const customerId = `${runId}-cust${customer}`;
  const activityId = `${customerId}-poison${n}`;
  const data =
    n % 2 === 0
      ? `{"activityId":"${activityId}","customerId":"${customerId}",` // malformed JSON
      : JSON.stringify({ activityId, customerId, seq: "not-a-number", kind: "" }); // schema violation
  return { activityId, customerId, seq: 0, data, poison: true };
};

const REFUSED = new Set([
  "ResourceInUseException",
  "ProvisionedThroughputExceededException",
  "LimitExceededException",
]);

/**
 * PutRecords in calls of at most 500, the failed entries of each call put again before the next
 * call: a caller that holds at most one record per partition key per call keeps each key's order.
 */
export async function putActivities(
  kinesis: KinesisClient,
  streamName: string,
  entries: readonly ActivityEntry[],
): Promise<PutActivity[]> {
  const put: PutActivity[] = [];
  for (let i = 0; i < entries.length; i += 500) {
    let pending = entries.slice(i, i + 500);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 20) throw new Error(`chaos: PutRecords kept failing for ${pending.length} records`);
      const out = await kinesis
        .send(
          new PutRecordsCommand({
            StreamName: streamName,
            Records: pending.map((e) => ({ PartitionKey: e.customerId, Data: Buffer.from(e.data) })),
          }),
        )
        .catch((error: Error) => {
          // A call refused as a whole (the stream busy with a reshard, throttled) wrote nothing: put again.
          if (!REFUSED.has(error.name)) throw error;
          return { Records: pending.map((): PutRecordsResultEntry => ({ ErrorCode: error.name })) };
        });
      const failed: ActivityEntry[] = [];
      (out.Records ?? []).forEach((r, j) => {
        const e = pending[j]!;
        if (r.ErrorCode || !r.SequenceNumber || !r.ShardId) failed.push(e);
        else put.push({ ...e, shardId: r.ShardId, sequenceNumber: r.SequenceNumber });
      });
      pending = failed;
      if (failed.length > 0) await sleep(100 * (attempt + 1));
    }
  }
  return put;
}

/** The stream's shards (open and closed). */
export async function listShards(kinesis: KinesisClient, streamName: string): Promise<Shard[]> {
  const shards: Shard[] = [];
  let token: string | undefined;
  do {
    const out = await kinesis.send(
      new ListShardsCommand(token ? { NextToken: token } : { StreamName: streamName }),
    );
    shards.push(...(out.Shards ?? []));
    token = out.NextToken;
  } while (token);
  return shards;
}

async function untilActive(kinesis: KinesisClient, streamName: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const out = await kinesis.send(new DescribeStreamSummaryCommand({ StreamName: streamName }));
    if (out.StreamDescriptionSummary?.StreamStatus === "ACTIVE") return;
    await sleep(100);
  }
  throw new Error(`chaos: stream ${streamName} did not become ACTIVE`);
}

const isOpen = (s: Shard) => s.SequenceNumberRange?.EndingSequenceNumber === undefined;

/** Splits the first open shard at the middle of its hash range; returns the parent and its two children. */
export async function splitShard(
  kinesis: KinesisClient,
  streamName: string,
): Promise<{ parent: string; children: string[] }> {
  await untilActive(kinesis, streamName);
  const open = (await listShards(kinesis, streamName)).filter(isOpen);
  const shard = open[0]!;
  const lo = BigInt(shard.HashKeyRange!.StartingHashKey!);
  const hi = BigInt(shard.HashKeyRange!.EndingHashKey!);
  await kinesis.send(
    new SplitShardCommand({
      StreamName: streamName,
      ShardToSplit: shard.ShardId!,
      NewStartingHashKey: ((lo + hi) / 2n + 1n).toString(),
    }),
  );
  await untilActive(kinesis, streamName);
  const children = (await listShards(kinesis, streamName))
    .filter((s) => s.ParentShardId === shard.ShardId)
    .map((s) => s.ShardId!);
  return { parent: shard.ShardId!, children };
}

/** Merges two adjacent open shards back into one; returns the new shard. */
export async function mergeShards(
  kinesis: KinesisClient,
  streamName: string,
  shardIds: readonly [string, string],
): Promise<string> {
  await untilActive(kinesis, streamName);
  const byId = new Map((await listShards(kinesis, streamName)).map((s) => [s.ShardId!, s]));
  // MergeShards takes the lower hash range first.
  const [a, b] = [...shardIds].sort((x, y) =>
    BigInt(byId.get(x)!.HashKeyRange!.StartingHashKey!) < BigInt(byId.get(y)!.HashKeyRange!.StartingHashKey!)
      ? -1
      : 1,
  );
  await kinesis.send(
    new MergeShardsCommand({ StreamName: streamName, ShardToMerge: a!, AdjacentShardToMerge: b! }),
  );
  await untilActive(kinesis, streamName);
  const merged = [...(await listShards(kinesis, streamName))].find(
    (s) => s.ParentShardId === a && s.AdjacentParentShardId === b,
  );
  if (!merged?.ShardId) throw new Error(`chaos: no shard merged from ${a} and ${b}`);
  return merged.ShardId;
}

/** The applied activity items of the app table: `applied` (the atomic counter) and `prevSeq` per record. */
interface Applied {
  readonly customerId: string;
  readonly seq: number;
  readonly applied: number;
  readonly prevSeq: number;
}

const num = (v: AttributeValue | undefined) => (v?.N === undefined ? Number.NaN : Number(v.N));

export async function appliedActivities(service: ChaosService): Promise<Applied[]> {
  const items = await scanTable(service.dynamodb, service.names.appTable);
  const out: Applied[] = [];
  for (const i of items) {
    const pk = i.pk?.S ?? "";
    const sk = i.sk?.S ?? "";
    if (!pk.startsWith("ACTIVITY#") || !sk.startsWith("SEQ#")) continue;
    out.push({
      customerId: pk.slice("ACTIVITY#".length),
      seq: Number(sk.slice(4)),
      applied: num(i.applied),
      prevSeq: num(i.prevSeq),
    });
  }
  return out;
}

/** What the checks found on stored data. */
export interface ActivityCheck {
  readonly lost: number;
  readonly duplicateEffects: number;
  /** Customers one of whose records did not follow the customer's previously applied record. */
  readonly keysOutOfOrder: number;
  /** Poison records parked with their payload and full context (stream ARN, shard, sequence number, error). */
  readonly poisonParked: number;
  /** Good records that were parked (must be 0). */
  readonly goodParked: number;
  /** Records that must not be applied (crashers Lambda gave up on) that were. */
  readonly unexpectedlyApplied: number;
  /** Lambda's on-failure records (KinesisBatchInfo) in the trigger's queue: sequence ranges given up on. */
  readonly givenUp: ReadonlyArray<{ shardId: string; start: string; end: string; batchSize: number }>;
  readonly details: Record<string, unknown[]>;
}

interface BatchInfo {
  KinesisBatchInfo?: {
    shardId: string;
    startSequenceNumber: string;
    endSequenceNumber: string;
    batchSize: number;
  };
}

/**
 * Checks the stored state against what was put: every good record applied once (its item's
 * `applied` counter is 1), never one of `notApplied`; per customer, each applied record's
 * `prevSeq` is the customer's previous applied seq (the chain the handler's optimistic head
 * update writes), so order is checked on what was stored; every poison parked once with its
 * context, nothing good parked. Reads the parking queue once (it hides what it reads).
 */
export async function checkActivities(
  service: ChaosService,
  put: readonly PutActivity[],
  notApplied: ReadonlySet<string> = new Set(),
  parked: readonly Message[] = [],
): Promise<ActivityCheck> {
  const applied = await appliedActivities(service);
  const byRecord = new Map(applied.map((a) => [`${a.customerId}#${a.seq}`, a]));
  const good = put.filter((p) => !p.poison);
  const lostIds = good
    .filter((p) => !notApplied.has(p.activityId) && !byRecord.has(`${p.customerId}#${p.seq}`))
    .map((p) => p.activityId);
  const unexpected = good
    .filter((p) => notApplied.has(p.activityId) && byRecord.has(`${p.customerId}#${p.seq}`))
    .map((p) => p.activityId);
  const duplicates = applied.filter((a) => a.applied !== 1);
  const chains = new Map<string, Applied[]>();
  for (const a of applied) chains.set(a.customerId, [...(chains.get(a.customerId) ?? []), a]);
  const outOfOrder: string[] = [];
  for (const [customer, chain] of chains) {
    chain.sort((x, y) => x.seq - y.seq);
    const broken = chain.find((a, i) => a.prevSeq !== (i === 0 ? 0 : chain[i - 1]!.seq));
    if (broken) outOfOrder.push(`${customer}: seq ${broken.seq} followed ${broken.prevSeq}`);
  }
  // The parking queue: records parked by the consumer (failure context) and Lambda's on-failure records.
  const poisonBySeq = new Map(put.filter((p) => p.poison).map((p) => [p.sequenceNumber, p]));
  const goodBySeq = new Map(good.map((p) => [p.sequenceNumber, p]));
  const parkedPoison = new Map<string, number>();
  const misparked: string[] = [];
  const givenUp: ActivityCheck["givenUp"][number][] = [];
  for (const m of parked) {
    const ctx = parkedContextOf(m);
    if (!ctx) {
      const info = (JSON.parse(m.Body ?? "{}") as BatchInfo).KinesisBatchInfo;
      if (info)
        givenUp.push({
          shardId: info.shardId,
          start: info.startSequenceNumber,
          end: info.endSequenceNumber,
          batchSize: info.batchSize,
        });
      else misparked.push(`unknown message ${m.MessageId}`);
      continue;
    }
    const offset = ctx["x-original-offset"] ?? "";
    const poison = poisonBySeq.get(offset);
    const complete =
      poison !== undefined &&
      ctx["x-original-topic"] === service.names.activityStreamArn &&
      ctx["x-original-partition"] === poison.shardId &&
      Boolean(ctx["x-last-error"]) &&
      m.Body?.includes(poison.activityId) === true;
    if (complete) parkedPoison.set(offset, (parkedPoison.get(offset) ?? 0) + 1);
    else
      misparked.push(`${goodBySeq.get(offset)?.activityId ?? offset}: ${JSON.stringify(ctx).slice(0, 200)}`);
  }
  const twiceParked = [...parkedPoison.values()].filter((n) => n > 1).length;
  return {
    lost: lostIds.length,
    duplicateEffects: duplicates.reduce((n, a) => n + Math.max(0, a.applied - 1), 0),
    keysOutOfOrder: outOfOrder.length,
    poisonParked: parkedPoison.size,
    goodParked: misparked.filter((m) => !m.startsWith("unknown")).length + twiceParked,
    unexpectedlyApplied: unexpected.length,
    givenUp,
    details: {
      lostIds: lostIds.slice(0, 20),
      duplicated: duplicates.slice(0, 20).map((a) => `${a.customerId}#${a.seq}×${a.applied}`),
      outOfOrder: outOfOrder.slice(0, 20),
      misparked: misparked.slice(0, 20),
      unexpectedlyApplied: unexpected.slice(0, 20),
      poisonNotParked: [...poisonBySeq.values()]
        .filter((p) => !parkedPoison.has(p.sequenceNumber))
        .map((p) => p.activityId)
        .slice(0, 20),
    },
  };
}
