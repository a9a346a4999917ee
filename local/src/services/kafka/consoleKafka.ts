/**
 * The Kafka view: each topic by its place in a retry ladder (`orders`, `orders.retry.5s`, …,
 * `orders.DLQ`), its partitions' offsets and every consumer group's lag on it, asked of the
 * cluster's admin API; the dead-letter topic's records with their context headers (lib/dlq's
 * reader); and the replay, which is `npm run dlq -- replay` (lib/dlq), ledger included.
 */
import type { IHeaders } from "kafkajs";
import { LAMBDA_ENV } from "reliable-consumers/cdk";
import { type KafkaDeadLetter, readTopicToEnd, replayKafkaDeadLetters } from "reliable-consumers/dlq";
import { bodyView, contextView } from "../../console/bodyView.ts";
import type {
  AttributeDto,
  KafkaDeadLetterDto,
  KafkaGroupLagDto,
  KafkaReplayRequest,
  KafkaTopicDto,
  MoveResultDto,
} from "../../console/consoleApi.ts";
import { ConsoleNotFound } from "../../console/consoleErrors.ts";
import type { ConsoleClients } from "../../console/consoleSources.ts";
import type { LocalApp } from "../../runtime/model.ts";
import { filterOf } from "../sqs/consoleQueues.ts";
import { moveResultOf } from "../sqs/moveResult.ts";

/** The records of a dead-letter topic the page gets at most (the newest). */
const MAX_LETTERS = 200;

/** `orders.retry.5s` → `{ base: "orders", rung: "retry.5s" }`; `orders.DLQ` → rung `DLQ`; else `main`. */
export function rungOf(topic: string): { base: string; rung: string } {
  const m = /^(.+)\.(retry\.[^.]+|DLQ)$/.exec(topic);
  return m ? { base: m[1]!, rung: m[2]! } : { base: topic, rung: "main" };
}

function headersView(headers: IHeaders | undefined): { all: Record<string, string>; list: AttributeDto[] } {
  const all: Record<string, string> = {};
  const list: AttributeDto[] = [];
  for (const [name, v] of Object.entries(headers ?? {})) {
    for (const one of [v].flat()) {
      if (one === undefined) continue;
      const value = Buffer.isBuffer(one) ? one.toString("utf8") : String(one);
      all[name] = value;
      list.push({ name, type: "header", value });
    }
  }
  return { all, list };
}

function letterView(l: KafkaDeadLetter): KafkaDeadLetterDto {
  const headers = headersView(l.message.headers);
  const context = Object.fromEntries(Object.entries(headers.all).filter(([k]) => k.startsWith("x-")));
  if (l.lastError !== undefined) context["x-last-error"] ??= l.lastError;
  return {
    id: l.id,
    partition: l.partition,
    offset: l.offset,
    deadLetteredAt: l.deadLetteredAtMs,
    writtenBy: l.writtenBy,
    errorType: l.errorType,
    key: l.message.key ? bodyView(l.message.key) : null,
    value: l.message.value ? bodyView(l.message.value) : null,
    context: contextView(context),
    headers: headers.list,
  };
}

export function consoleKafka(app: LocalApp | undefined, clients: ConsoleClients) {
  const groupLags = async (topic: string, high: Map<number, bigint>, low: Map<number, bigint>) => {
    const admin = await clients.admin();
    if (!admin) return [];
    const { groups } = await admin.listGroups();
    const lags: KafkaGroupLagDto[] = [];
    for (const g of groups) {
      if (g.groupId.startsWith("dlq-tool-")) continue; // lib/dlq's own readers commit nothing
      const [offsets] = await admin.fetchOffsets({ groupId: g.groupId, topics: [topic] });
      const partitions = (offsets?.partitions ?? []).map((p) => {
        const end = high.get(p.partition) ?? 0n;
        const committed = BigInt(p.offset) >= 0n ? BigInt(p.offset) : (low.get(p.partition) ?? 0n);
        return { partition: p.partition, committed: p.offset, lag: Number(end - committed) };
      });
      if (partitions.every((p) => BigInt(p.committed) < 0n)) continue; // never consumed this topic
      lags.push({ groupId: g.groupId, lag: partitions.reduce((n, p) => n + p.lag, 0), partitions });
    }
    return lags;
  };
  /** The ledger a replay keeps (lib/dlq): the dedup table of a consumer of the topic, else the app's first. */
  const ledgerTable = (base: string): string | undefined => {
    const consumers = new Set(
      (app?.mappings ?? [])
        .filter((m) => m.kind === "kafka" && m.topics.includes(base))
        .map((m) => m.functionName),
    );
    const withTable = (app?.functions ?? []).filter((f) => f.environment[LAMBDA_ENV.dedupTableName]);
    const fn = withTable.find((f) => consumers.has(f.name)) ?? withTable[0];
    return fn?.environment[LAMBDA_ENV.dedupTableName];
  };
  return {
    async topics(): Promise<KafkaTopicDto[]> {
      const admin = await clients.admin();
      if (!admin) return [];
      const names = (await admin.listTopics()).filter((t) => !t.startsWith("__")).sort();
      return Promise.all(
        names.map(async (name) => {
          const offsets = (await admin.fetchTopicOffsets(name)).sort((a, b) => a.partition - b.partition);
          const high = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
          const low = new Map(offsets.map((o) => [o.partition, BigInt(o.low)]));
          return {
            name,
            ...rungOf(name),
            partitions: offsets.map((o) => ({ partition: o.partition, low: o.low, high: o.high })),
            groups: await groupLags(name, high, low),
          };
        }),
      );
    },
    async letters(topic: string): Promise<KafkaDeadLetterDto[]> {
      if (!clients.kafka) throw new ConsoleNotFound("no Kafka in this run");
      const letters: KafkaDeadLetter[] = [];
      await readTopicToEnd(
        topic,
        async (batch) => {
          letters.push(...batch);
          if (letters.length > MAX_LETTERS) letters.splice(0, letters.length - MAX_LETTERS);
        },
        { connection: clients.kafka, idleTimeoutMs: 15_000 },
      );
      return letters.sort((a, b) => b.deadLetteredAtMs - a.deadLetteredAtMs).map(letterView);
    },
    /** `npm run dlq -- replay --topic <t> [--id …] [--error-type …] [--until …] [--ledger-table …] [--dry-run]`. */
    async replay(request: KafkaReplayRequest, now = Date.now()): Promise<MoveResultDto & { ledger: string }> {
      if (!clients.kafka) throw new ConsoleNotFound("no Kafka in this run");
      const table = ledgerTable(rungOf(request.topic).base);
      const result = await replayKafkaDeadLetters(request.topic, {
        filter: filterOf(request, now),
        dryRun: request.dryRun,
        connection: clients.kafka,
        ledger: table ? { tableName: table, client: clients.ddb } : false,
        idleTimeoutMs: 15_000,
      });
      return {
        ...moveResultOf(request.dryRun, result),
        ledger: table ?? "none (the app has no dedup table): every run republishes what matches",
      };
    },
  };
}
