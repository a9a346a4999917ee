import type { KinesisClient } from "@aws-sdk/client-kinesis";
import { KinesisClient as Kinesis } from "@aws-sdk/client-kinesis";
import type { KinesisEventSource } from "../local/src/services/kinesis/eventSource.ts";
import { queueDepth } from "../local/src/services/sqs/queueDepth.ts";
import { type ChaosService, startChaosService } from "./chaosService.ts";
import { createFaultLedger } from "./faults.ts";
import { startHttpFaultProxy } from "./httpFaultProxy.ts";
import {
  type ActivityEntry,
  activityEntry,
  appliedActivities,
  checkActivities,
  mergeShards,
  type PutActivity,
  poisonEntry,
  putActivities,
  splitShard,
} from "./kinesisWorkload.ts";
import { createRng } from "./rng.ts";
import { type ScenarioContext, type ScenarioResult, waitFor } from "./scenarios.ts";
import { readQueue } from "./storedState.ts";

/**
 * Scenarios 12-14: activity-consumer (a `kinesisConsumer`, `ordering: "key"`, unit of work per
 * record) on the reference service's order-activity stream (2 provisioned shards), on kinesis-local
 * through the local runtime's Kinesis mapping. Checked on stored data (kinesisWorkload.ts).
 */

const runId = (what: string) =>
  `chaos-${what}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;

const kinesisOf = (ctx: ScenarioContext): KinesisClient =>
  new Kinesis({
    endpoint: ctx.endpoints.kinesis,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });

const activitySource = (service: ChaosService): KinesisEventSource => {
  const s = service.runtime.eventSources.find((e) => e.mapping.kind === "kinesis");
  if (!s) throw new Error("chaos: no Kinesis mapping in the reference service");
  return s as KinesisEventSource;
};

/** Rounds of one good record per customer (`seq` = round), poison mixed in on chosen rounds. */
function rounds(
  id: string,
  options: { customers: number; versions: number; poison?: number; seed: number },
): ActivityEntry[][] {
  const rng = createRng(options.seed);
  const out: ActivityEntry[][] = Array.from({ length: options.versions }, (_, r) =>
    Array.from({ length: options.customers }, (_, c) => activityEntry(id, c, r + 1)),
  );
  // Poison on a random customer's key in a random round, never twice on one key in one round
  // (one PutRecords call holds at most one record per key: its order is then kept).
  for (let n = 0; n < (options.poison ?? 0); n++) {
    const round = out[rng.int(0, out.length - 1)]!;
    const c = rng.int(0, options.customers - 1);
    const at = round.findIndex((e) => e.customerId.endsWith(`-cust${c}`));
    round.splice(at + 1, 0, poisonEntry(id, c, n));
  }
  return out;
}

/** Puts each round in its own calls, in order (one record per key per call). */
async function produce(
  kinesis: KinesisClient,
  service: ChaosService,
  plan: readonly ActivityEntry[][],
  between?: (round: number) => Promise<void>,
): Promise<PutActivity[]> {
  const put: PutActivity[] = [];
  for (let r = 0; r < plan.length; r++) {
    const round = plan[r]!;
    // A poison shares its key with the good record before it: a call of its own keeps them in order.
    const first = round.filter((e, i) => !e.poison || round[i - 1]?.customerId !== e.customerId);
    const second = round.filter((e) => !first.includes(e));
    put.push(...(await putActivities(kinesis, service.names.activityStreamName, first)));
    if (second.length > 0)
      put.push(...(await putActivities(kinesis, service.names.activityStreamName, second)));
    await between?.(r + 1);
  }
  return put;
}

/**
 * Waits until every good record but `notApplied` is applied, and the trigger's queue holds
 * `parked` messages at least (poison parked, Lambda's on-failure records), then reads the queue.
 */
async function settleActivities(
  ctx: ScenarioContext,
  service: ChaosService,
  put: readonly PutActivity[],
  expect: { notApplied: ReadonlySet<string>; parked: number },
) {
  const goal = put.filter((p) => !p.poison && !expect.notApplied.has(p.activityId)).length;
  let applied = 0;
  let parked = 0;
  let lastLog = Date.now();
  await waitFor(
    `${goal} activity records applied (had ${applied}) and ${expect.parked} messages in activity-consumer's queue (had ${parked})`,
    async () => {
      applied = (await appliedActivities(service)).length;
      const d = await queueDepth(service.sqs, service.names.activityParkingUrl);
      parked = d.visible + d.inFlight;
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        ctx.log(`  … ${applied}/${goal} applied, ${parked}/${expect.parked} in the parking queue`);
      }
      return applied >= goal && parked >= expect.parked;
    },
    ctx.settleTimeoutMs ?? 300_000,
    1_000,
  );
  return readQueue(service.sqs, service.names.activityParkingUrl);
}

const figuresOf = (check: Awaited<ReturnType<typeof checkActivities>>, messages: number, faults: number) => ({
  messages,
  faultsInjected: faults,
  lost: check.lost,
  duplicateEffects: check.duplicateEffects,
  dlq: check.poisonParked + check.goodParked + check.givenUp.length,
  // No outbox events on this path; per-key order is `keysOutOfOrder`.
  aggregatesOutOfOrder: null,
  keysOutOfOrder: check.keysOutOfOrder,
  goodDeadLettered: check.goodParked,
});

// ───────────────────────── 12. poison in a Kinesis shard under load ─────────────────────────

/**
 * Producers put keyed activity (one sequence per customer) on both shards, with poison on the
 * customers' own keys (malformed JSON, schema violations). Expect: each poison parked once by the
 * consumer in the trigger's queue with its payload and context (stream ARN, shard, sequence
 * number, error); its shard and its key go on; every good record applied once, each customer's in
 * order.
 */
export async function kinesisPoisonUnderLoad(
  ctx: ScenarioContext,
  options: { customers: number; versions: number; poison: number },
): Promise<ScenarioResult> {
  const started = Date.now();
  const id = runId("kpoison");
  const service = await startChaosService({ assembly: ctx.assembly, prefix: id, direct: ctx.endpoints });
  const kinesis = kinesisOf(ctx);
  try {
    const plan = rounds(id, { ...options, seed: ctx.seed + 12 });
    const put = await produce(kinesis, service, plan);
    const poison = put.filter((p) => p.poison).length;
    const parked = await settleActivities(ctx, service, put, { notApplied: new Set(), parked: poison });
    const check = await checkActivities(service, put, new Set(), parked);
    const shards = new Set(put.map((p) => p.shardId)).size;
    ctx.log(`  ${put.length} records on ${shards} shards, ${check.poisonParked}/${poison} poison parked`);
    return {
      name: "kinesisPoisonUnderLoad",
      figures: {
        ...figuresOf(check, put.length, poison),
        poisonParkedCorrectly: check.poisonParked === poison && check.goodParked === 0,
        poison,
        shards,
        settled: true,
      },
      details: check.details,
      durationMs: Date.now() - started,
    };
  } finally {
    kinesis.destroy();
    await service.stop();
  }
}

// ───────────────────────── 13. reshard while producers write ─────────────────────────

/**
 * Producers write rounds of keyed activity while a shard is split (a third of the way) and its two
 * children are merged back (two thirds of the way, once the mapping reads the children). Expect:
 * the mapping reads a child only after its parents are drained, so each customer's records are
 * applied in order across parent, children and grandchild; nothing lost, nothing applied twice.
 */
export async function kinesisReshard(
  ctx: ScenarioContext,
  options: { customers: number; versions: number },
): Promise<ScenarioResult> {
  const started = Date.now();
  const id = runId("reshard");
  const service = await startChaosService({ assembly: ctx.assembly, prefix: id, direct: ctx.endpoints });
  const kinesis = kinesisOf(ctx);
  const source = activitySource(service);
  const stream = service.names.activityStreamName;
  let children: string[] = [];
  let merged = "";
  let faults = 0;
  try {
    const plan = rounds(id, { ...options, seed: ctx.seed + 13 });
    const splitAt = Math.max(1, Math.floor(options.versions / 3));
    // Both reshards happen before the last round, which then lands on the merged shard.
    const mergeAt = Math.min(
      options.versions - 1,
      Math.max(splitAt + 1, Math.floor((2 * options.versions) / 3)),
    );
    // Each reshard starts as a round is put and runs alongside the next round's puts.
    let resharding: Promise<void> | undefined;
    const put = await produce(kinesis, service, plan, async (round) => {
      await resharding;
      if (round === splitAt) {
        // Records are being applied when the shard splits (by count, not by a pause).
        await waitFor(
          "the first activity records applied before the split",
          async () => (await appliedActivities(service)).length > 0,
          ctx.settleTimeoutMs ?? 300_000,
          500,
        );
        resharding = splitShard(kinesis, stream).then((split) => {
          children = split.children;
          faults++;
          ctx.log(`  split ${split.parent} into ${children.join(", ")} during round ${round + 1}`);
        });
      }
      if (round === mergeAt) {
        // The merge comes once the mapping has found the children (a refresh every 5 s).
        await waitFor(
          `the mapping to list the children ${children.join(", ")}`,
          () => children.every((c) => source.positions().some((p) => p.shardId === c)),
          ctx.settleTimeoutMs ?? 300_000,
          200,
        );
        resharding = mergeShards(kinesis, stream, children as [string, string]).then((m) => {
          merged = m;
          faults++;
          ctx.log(`  merged ${children.join(" + ")} into ${merged} during round ${round + 1}`);
        });
      }
    });
    await resharding;
    const parked = await settleActivities(ctx, service, put, { notApplied: new Set(), parked: 0 });
    const check = await checkActivities(service, put, new Set(), parked);
    const shardsUsed = [...new Set(put.map((p) => p.shardId))];
    return {
      name: "kinesisReshard",
      figures: {
        ...figuresOf(check, put.length, faults),
        poisonParkedCorrectly: null,
        splits: children.length > 0 ? 1 : 0,
        merges: merged ? 1 : 0,
        shardsWritten: shardsUsed.length,
        recordsOnChildren: put.filter((p) => children.includes(p.shardId)).length,
        recordsOnMerged: put.filter((p) => p.shardId === merged).length,
        settled: true,
      },
      details: check.details,
      durationMs: Date.now() - started,
    };
  } finally {
    kinesis.destroy();
    await service.stop();
  }
}

// ───────────────────────── 14. the function crashes mid-batch ─────────────────────────

/** Whether a Kinesis event holds the record of `activityId` (its data decoded). */
function eventHolds(event: unknown, activityId: string): boolean {
  const records = (event as { Records?: Array<{ kinesis?: { data?: string } }> } | null)?.Records ?? [];
  return records.some((r) =>
    Buffer.from(r.kinesis?.data ?? "", "base64")
      .toString("utf8")
      .includes(`"${activityId}"`),
  );
}

/**
 * Keyed activity on both shards; chosen records crash activity-consumer's environment whenever
 * their unit of work is about to commit (the DynamoDB request carrying their inbox marker is
 * dropped and the environment running the batch is killed, as a runtime crash or an out-of-memory
 * kills it), mid-batch: records of other customers in the batch may have committed already.
 * "Always" crashers crash on every attempt, "once" crashers on the first only (counted per record).
 * Expect: Lambda's mapping bisects the batch; each "always" crasher is given up on alone (a batch
 * of 1) to the on-failure destination (the trigger's queue, KinesisBatchInfo) and never applied;
 * each "once" crasher applied once on a retry; every other record applied once, each customer's
 * in order (the records after a crasher follow the customer's last applied one).
 */
export async function kinesisCrashMidBatch(
  ctx: ScenarioContext,
  options: { customers: number; versions: number; always: number; once: number },
): Promise<ScenarioResult> {
  const started = Date.now();
  const id = runId("kcrash");
  const plan = rounds(id, { ...options, seed: ctx.seed + 14 });
  // Crashers spread over the run: round i·step, customer i.
  const step = Math.max(1, Math.floor(options.versions / (options.always + options.once + 1)));
  const allow = new Map<string, number>(); // activityId → crashes allowed
  for (let i = 0; i < options.always + options.once; i++) {
    const e = plan[Math.min(plan.length - 1, (i + 1) * step - 1)]![i % options.customers]!;
    allow.set(e.activityId, i < options.always ? Number.POSITIVE_INFINITY : 1);
  }
  const always = new Set([...allow].filter(([, n]) => n === Number.POSITIVE_INFINITY).map(([a]) => a));
  const crashes = new Map<string, number>();
  let service: ChaosService | undefined;
  const proxy = await startHttpFaultProxy({
    upstream: ctx.endpoints.dynamodb,
    plan: { rate: 0 },
    rng: createRng(ctx.seed + 140),
    ledger: createFaultLedger(),
    target: "dynamodb",
    intercept: (operation, body) => {
      if (operation !== "TransactWriteItems" || !service) return false;
      const text = body.toString("utf8");
      for (const [activityId, allowed] of allow) {
        if ((crashes.get(activityId) ?? 0) >= allowed || !text.includes(`"${activityId}"`)) continue;
        const envs = service.runtime.host
          .busyEnvironments(service.functions.activity)
          .filter((e) => eventHolds(e.event, activityId));
        if (envs.length === 0) return false;
        for (const e of envs) e.kill(`chaos: ${activityId} crashes its function`);
        crashes.set(activityId, (crashes.get(activityId) ?? 0) + 1);
        return true;
      }
      return false;
    },
  });
  service = await startChaosService({
    assembly: ctx.assembly,
    prefix: id,
    direct: ctx.endpoints,
    functionEndpoints: { dynamodb: proxy.endpoint },
  });
  const kinesis = kinesisOf(ctx);
  try {
    const put = await produce(kinesis, service, plan);
    const parked = await settleActivities(ctx, service, put, { notApplied: always, parked: always.size });
    const check = await checkActivities(service, put, always, parked);
    const bySeq = new Map(put.map((p) => [p.sequenceNumber, p]));
    // Each always-crasher given up on alone (Lambda's record names the batch's range and size).
    const isolated = check.givenUp.filter(
      (g) => g.batchSize === 1 && g.start === g.end && always.has(bySeq.get(g.start)?.activityId ?? ""),
    );
    const givenUpGood = check.givenUp.filter((g) => !always.has(bySeq.get(g.start)?.activityId ?? "")).length;
    const kills = [...crashes.values()].reduce((a, b) => a + b, 0);
    const applied = new Set((await appliedActivities(service)).map((a) => `${a.customerId}#${a.seq}`));
    const onceApplied = put.filter(
      (p) =>
        allow.get(p.activityId) === 1 &&
        crashes.get(p.activityId) === 1 &&
        applied.has(`${p.customerId}#${p.seq}`),
    ).length;
    ctx.log(
      `  ${kills} kills; ${isolated.length}/${always.size} crashers isolated by Lambda; ${onceApplied}/${options.once} once-crashers applied`,
    );
    return {
      name: "kinesisCrashMidBatch",
      figures: {
        ...figuresOf(check, put.length, kills),
        poisonParkedCorrectly: null,
        goodDeadLettered: check.goodParked + givenUpGood,
        crashers: allow.size,
        kills,
        crashersIsolated: isolated.length,
        crashersApplied: check.unexpectedlyApplied,
        onceCrashersApplied: onceApplied,
        settled: true,
      },
      details: check.details,
      durationMs: Date.now() - started,
    };
  } finally {
    kinesis.destroy();
    await service.stop();
    await proxy.close();
  }
}
