import { randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { Kafka, type KafkaMessage, logLevel } from "kafkajs";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import { createDedupStore, type DedupStore, type Lease } from "../dedup/dedupStore.ts";
import { LAMBDA_ENV } from "../env.ts";
import { type KafkaConnectionConfig, kafkaConfigFromEnv, toKafkaJsConfig } from "../kafka/config.ts";
import { getKafkaProducer, type KafkaProducer, type OutgoingMessage } from "../kafka/producer.ts";
import type { RegistryFor } from "../kafka/reframe.ts";
import { confluentRegistry } from "../kafka/schemas/confluentRegistry.ts";
import { CONFLUENT_REGISTRY_ENV } from "../kafka/schemas/env.ts";
import { glueRegistry } from "../kafka/schemas/glueRegistry.ts";
import type { SchemaRegistry } from "../kafka/schemas/registry.ts";
import { topicOffsets } from "../kafka/topicsWithLeaders.ts";
import {
  type DeadLetterFilter,
  type DeadLetterSummary,
  errorTypeOf,
  type MoveProgress,
  matchesFilter,
  summarise,
} from "./filters.ts";
import { lambdaFailureError, readLambdaFailureRecord } from "./lambdaFailureRecord.ts";
import { reframedForReplay, replayMessage } from "./replayMessage.ts";

export { replayMessage };

/** A record of a Kafka dead-letter topic, with its failure context. */
export interface KafkaDeadLetter {
  /** The dead-letter topic the record was read from. */
  readonly topic: string;
  /** The record's partition in the dead-letter topic. */
  readonly partition: number;
  /** The record's offset in the dead-letter topic, as a decimal string. */
  readonly offset: string;
  /**
   * Who wrote it: the consumer (the record with its `x-*` context headers), or Lambda's on-failure
   * destination (a record Lambda gave up on, inside its failure document; see lambdaFailureRecord.ts).
   */
  readonly writtenBy: "consumer" | "lambda";
  /** The record's place in Lambda's failure document (0 for the consumer's letters). */
  readonly index: number;
  /** `<partition>:<offset>`, `#<index>` added inside a Lambda document: what `DeadLetterFilter.ids` selects by. */
  readonly id: string;
  /** When it was dead-lettered (the DLQ record's timestamp). */
  readonly deadLetteredAtMs: number;
  /** The type part of `lastError`, or `unknown`. */
  readonly errorType: string;
  /** `x-last-error` (`Type: message`); for Lambda's letters, a text made from its failure document. */
  readonly lastError: string | undefined;
  /** `x-original-topic`: the topic to replay to. */
  readonly originalTopic: string | undefined;
  /** `x-message-id` (for Lambda's letters, else `message-id`): the id the consumer deduplicates by. */
  readonly messageId: string | undefined;
  /** The record to replay: the DLQ record itself, or the one Lambda wrote inside its document. */
  readonly message: KafkaMessage;
}

const header = (m: Pick<KafkaMessage, "headers">, name: string): string | undefined => {
  const v = m.headers?.[name];
  const one = Array.isArray(v) ? v[v.length - 1] : v;
  return one === undefined ? undefined : one.toString();
};

/** One DLQ record → its dead letters: itself, or each record inside Lambda's failure document. */
export function toDeadLetters(topic: string, partition: number, message: KafkaMessage): KafkaDeadLetter[] {
  const at = { topic, partition, offset: message.offset, deadLetteredAtMs: Number(message.timestamp) };
  const lambda = readLambdaFailureRecord(message.value);
  if (!lambda) {
    const lastError = header(message, CONTEXT_HEADERS.lastError);
    return [
      {
        ...at,
        writtenBy: "consumer",
        index: 0,
        id: `${partition}:${message.offset}`,
        errorType: errorTypeOf(lastError),
        lastError,
        originalTopic: header(message, CONTEXT_HEADERS.originalTopic),
        messageId: header(message, CONTEXT_HEADERS.messageId),
        message,
      },
    ];
  }
  return lambda.records.map((r, index) => {
    const lastError = lambdaFailureError(lambda, r);
    // kafkajs's KafkaMessage type is a union of wire entries; only these fields are read.
    const original = {
      key: r.key,
      value: r.value,
      headers: r.headers,
      timestamp: r.timestamp,
      offset: r.offset,
      attributes: 0,
    } as unknown as KafkaMessage;
    return {
      ...at,
      writtenBy: "lambda" as const,
      index,
      id: `${partition}:${message.offset}${index > 0 ? `#${index}` : ""}`,
      errorType: errorTypeOf(lastError),
      lastError,
      originalTopic: header(original, CONTEXT_HEADERS.originalTopic),
      messageId: header(original, CONTEXT_HEADERS.messageId) ?? header(original, "message-id"),
      message: original,
    };
  });
}

/** Options for reading a Kafka dead-letter topic. */
export interface ReadOptions {
  /**
   * The cluster (and, without `producer`, where a replay publishes).
   * @default from the environment (`kafkaConfigFromEnv`)
   */
  readonly connection?: KafkaConnectionConfig;
  /** Gives up when no record arrives for this long before the end is reached. @default 30000 ms */
  readonly idleTimeoutMs?: number;
  /** Called once with the number of records to read (high − low watermark, summed). */
  readonly onTotal?: (total: number) => void;
}

/**
 * Reads a topic from its low to its high watermark *as of the start*, batch by batch, then stops.
 * Uses a throw-away consumer group that commits nothing, so reading never moves anyone's offsets.
 */
export async function readTopicToEnd(
  topic: string,
  onBatch: (letters: KafkaDeadLetter[]) => Promise<void>,
  options: ReadOptions = {},
): Promise<{ total: number }> {
  const kafka = new Kafka({
    ...toKafkaJsConfig(options.connection ?? kafkaConfigFromEnv()),
    logLevel: logLevel.ERROR,
  });
  const offsets = await topicOffsets(kafka, topic);
  const ends = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
  let total = 0;
  for (const o of offsets) total += Number(BigInt(o.high) - BigInt(o.low));
  // Partitions with nothing to read are done already.
  for (const o of offsets) if (BigInt(o.high) <= BigInt(o.low)) ends.delete(o.partition);
  options.onTotal?.(total);
  if (ends.size === 0) return { total: 0 };

  const consumer = kafka.consumer({
    groupId: `dlq-tool-${randomUUID()}`,
    sessionTimeout: 10_000,
    rebalanceTimeout: 2_000,
    heartbeatInterval: 1_000,
    maxWaitTimeInMs: 200,
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      let idle: NodeJS.Timeout | undefined;
      const armIdle = () => {
        clearTimeout(idle);
        idle = setTimeout(
          () => reject(new Error(`no records from ${topic} for ${options.idleTimeoutMs ?? 30_000} ms`)),
          options.idleTimeoutMs ?? 30_000,
        );
      };
      armIdle();
      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch, heartbeat }) => {
            const end = ends.get(batch.partition);
            if (end === undefined) return;
            armIdle();
            const mine = batch.messages.filter((m) => BigInt(m.offset) < end);
            if (mine.length > 0) await onBatch(mine.flatMap((m) => toDeadLetters(topic, batch.partition, m)));
            await heartbeat();
            const last = mine[mine.length - 1];
            if (last && BigInt(last.offset) + 1n >= end) ends.delete(batch.partition);
            if (ends.size === 0) {
              clearTimeout(idle);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return { total };
}

/** What sits in a dead-letter topic, grouped by error type (no payloads). */
export async function inspectKafkaDeadLetters(
  topic: string,
  options: ReadOptions & { filter?: DeadLetterFilter } = {},
): Promise<DeadLetterSummary> {
  const letters: {
    errorType: string;
    deadLetteredAtMs: number;
    source: string | undefined;
    lastError?: string;
  }[] = [];
  await readTopicToEnd(
    topic,
    async (batch) => {
      for (const l of batch) {
        if (options.filter && !matchesFilter(options.filter, l)) continue;
        letters.push({
          errorType: l.errorType,
          deadLetteredAtMs: l.deadLetteredAtMs,
          source: l.originalTopic,
          ...(l.lastError !== undefined ? { lastError: l.lastError } : {}),
        });
      }
    },
    options,
  );
  return summarise(letters);
}

/** Options of `replayKafkaDeadLetters`. */
export interface ReplayOptions extends ReadOptions {
  /** Which dead letters to replay; the others are skipped. @default - every one */
  readonly filter?: DeadLetterFilter;
  /** Count what would move; move nothing. @default false */
  readonly dryRun?: boolean;
  /** Republish here instead of `x-original-topic`. @default - each letter's `x-original-topic` */
  readonly toTopic?: string;
  /** Move at most this many records (a count); the rest are skipped. @default - no limit */
  readonly limit?: number;
  /**
   * The replay ledger: which DLQ records were already replayed, so running a replay twice (or after
   * a crash) republishes each record once. `false` turns it off (every run republishes everything
   * that matches). @default a dedup store on DEDUP_TABLE_NAME, scope `dlq-replay/<topic>`, 30 days
   */
  readonly ledger?: DedupStore | { tableName: string; client?: DynamoDBClient } | false;
  /** The producer to republish with. @default the cached producer for `connection` (`getKafkaProducer`) */
  readonly producer?: KafkaProducer;
  /** Called after each batch read with the counts so far. @default - none */
  readonly onProgress?: (p: MoveProgress) => void;
  /**
   * The registry clients that encode a letter's JSON part again for the main topic's mapping
   * (`reframedForReplay`; a part in SOURCE form needs none). @default per kind, from the
   * environment: `confluentRegistry()` when SCHEMA_REGISTRY_URL is set, `glueRegistry()`
   */
  readonly registry?: RegistryFor;
}

/** What a replay republished, skipped and failed. */
export interface ReplayResult extends MoveProgress {
  /** Already replayed by an earlier run (per the ledger). */
  readonly alreadyReplayed: number;
  /** Records with no `x-original-topic` and no `toTopic`: left in place. */
  readonly noDestination: number;
  /** Records republished, per destination topic. */
  readonly byDestination: Record<string, number>;
}

/** The ledger that makes a replay exactly once per DLQ record: given, made on DEDUP_TABLE_NAME, or none. */
function replayLedger(deadLetterTopic: string, options: ReplayOptions): DedupStore | undefined {
  if (options.ledger === false || options.dryRun) return undefined;
  if (options.ledger && "claim" in options.ledger) return options.ledger;
  const tableName =
    (options.ledger && "tableName" in options.ledger ? options.ledger.tableName : undefined) ??
    process.env[LAMBDA_ENV.dedupTableName];
  if (tableName === undefined)
    throw new Error("replay needs a ledger table: --ledger-table, DEDUP_TABLE_NAME, or --no-ledger");
  return createDedupStore({
    tableName,
    scope: `dlq-replay/${deadLetterTopic}`,
    windowSeconds: 30 * 86_400,
    ...(options.ledger && "client" in options.ledger && options.ledger.client
      ? { client: options.ledger.client }
      : {}),
  });
}

/** The registry clients a replay frames JSON parts with, made once per kind, from the environment. */
function registriesFromEnv(): RegistryFor {
  const made = new Map<string, SchemaRegistry | undefined>();
  return (kind) => {
    if (!made.has(kind))
      made.set(
        kind,
        kind === "glue"
          ? glueRegistry()
          : process.env[CONFLUENT_REGISTRY_ENV.url]
            ? confluentRegistry()
            : undefined,
      );
    return made.get(kind);
  };
}

type Chosen = { letter: KafkaDeadLetter; destination: string; lease: Lease | undefined };

/**
 * One produce request for the chosen letters; their ledger claims are completed only after the
 * cluster acknowledged it, and given back when it failed (the error is rethrown). A letter that
 * cannot be framed for its destination again (`reframedForReplay`) is left out, its claim given
 * back; those are returned, with why.
 */
async function sendReplays(
  producer: KafkaProducer,
  ledger: DedupStore | undefined,
  chosen: ReadonlyArray<Chosen>,
  registryFor: RegistryFor,
): Promise<Array<{ chosen: Chosen; error: unknown }>> {
  const byTopic = new Map<string, OutgoingMessage[]>();
  const now = new Date();
  const unframed: Array<{ chosen: Chosen; error: unknown }> = [];
  const sent: Chosen[] = [];
  for (const c of chosen) {
    try {
      const message = await reframedForReplay(replayMessage(c.letter, now), registryFor);
      byTopic.set(c.destination, [...(byTopic.get(c.destination) ?? []), message]);
      sent.push(c);
    } catch (error) {
      unframed.push({ chosen: c, error });
      if (ledger && c.lease) await ledger.release(c.lease);
    }
  }
  try {
    await producer.sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
  } catch (error) {
    if (ledger) await Promise.all(sent.map((c) => (c.lease ? ledger.release(c.lease) : undefined)));
    throw error;
  }
  if (ledger) {
    await Promise.all(sent.map((c) => (c.lease ? ledger.complete(c.lease) : undefined)));
    await ledger.flush();
  }
  return unframed;
}

/**
 * Republishes dead letters to their original topic (`replay --topic orders.DLQ`). Exactly once per
 * DLQ record: each is claimed in the ledger before it is sent and marked done only after the
 * cluster acknowledged it (acks=all); a crash in between re-sends it on the next run, and the
 * consumer deduplicates that by `x-message-id`. The DLQ itself is never modified (Kafka cannot
 * delete single records); its retention cleans it.
 */
export async function replayKafkaDeadLetters(
  deadLetterTopic: string,
  options: ReplayOptions = {},
): Promise<ReplayResult> {
  const ledger = replayLedger(deadLetterTopic, options);
  const producer = options.producer ?? getKafkaProducer(options.connection ?? kafkaConfigFromEnv());
  const registryFor = options.registry ?? registriesFromEnv();
  const progress = { total: 0, seen: 0, moved: 0, skipped: 0, failed: 0 };
  let alreadyReplayed = 0;
  let noDestination = 0;
  const byDestination: Record<string, number> = {};
  const limit = options.limit ?? Number.POSITIVE_INFINITY;

  const { total } = await readTopicToEnd(
    deadLetterTopic,
    async (batch) => {
      const chosen: { letter: KafkaDeadLetter; destination: string; lease: Lease | undefined }[] = [];
      for (const letter of batch) {
        progress.seen++;
        const destination = options.toTopic ?? letter.originalTopic;
        if (
          progress.moved + chosen.length >= limit ||
          (options.filter && !matchesFilter(options.filter, letter))
        ) {
          progress.skipped++;
          continue;
        }
        if (!destination) {
          noDestination++;
          progress.skipped++;
          continue;
        }
        let lease: Lease | undefined;
        if (ledger) {
          // One ledger entry per record: a Lambda document may hold several.
          const claim = await ledger.claim(letter.id);
          if (claim.status !== "claimed") {
            alreadyReplayed++;
            progress.skipped++;
            continue;
          }
          lease = claim.lease;
        }
        chosen.push({ letter, destination, lease });
      }
      if (options.dryRun) {
        for (const c of chosen) byDestination[c.destination] = (byDestination[c.destination] ?? 0) + 1;
        progress.moved += chosen.length;
      } else if (chosen.length > 0) {
        let unframed: Awaited<ReturnType<typeof sendReplays>>;
        try {
          unframed = await sendReplays(producer, ledger, chosen, registryFor);
        } catch (error) {
          progress.failed += chosen.length;
          options.onProgress?.({ ...progress });
          throw error;
        }
        for (const u of unframed)
          process.emitWarning(
            `dead letter ${u.chosen.letter.id} not replayed: ${(u.error as Error).message ?? String(u.error)}`,
          );
        progress.failed += unframed.length;
        const moved = chosen.filter((c) => !unframed.some((u) => u.chosen === c));
        for (const c of moved) byDestination[c.destination] = (byDestination[c.destination] ?? 0) + 1;
        progress.moved += moved.length;
      }
      options.onProgress?.({ ...progress });
    },
    {
      ...options,
      onTotal: (n) => {
        progress.total = n;
      },
    },
  );
  progress.total = total;
  return { ...progress, alreadyReplayed, noDestination, byDestination };
}
