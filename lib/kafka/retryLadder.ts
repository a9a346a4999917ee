/**
 * The non-blocking retry ladder (Spring Kafka's `@RetryableTopic`, and Uber's "reliable reprocessing"):
 * a record that fails is produced to `<topic>.retry.<delay>` and the main partition moves on. Each rung
 * has one fixed delay, so every retry topic is ordered by due time and its consumer only waits for
 * the head. After the last rung, or at once for a permanent error, the record goes to `<topic>.DLQ`.
 *
 * Pure: no kafkajs, no AWS. The rung a record is on comes from its `x-retry-count` header (failures
 * so far), not from the topic name, so a ladder may repeat a delay (`["5s", "5s", "1m"]`): both 5 s
 * rungs share the `.retry.5s` topic.
 */
import { ConsumerConfigError } from "../core/errors.ts";

/** A Kafka retry ladder: its delays, its retry topics and its dead-letter topic. */
export interface RetryLadder {
  /** Delay of each rung, in milliseconds, in order. Empty: failures go straight to the DLQ. */
  readonly delaysMs: readonly number[];
  /** Between a topic and a rung's delay in a retry topic's name. @default ".retry." → `orders.retry.5s` */
  readonly retrySeparator: string;
  /** Appended to a topic's name for its dead-letter topic. @default ".DLQ" → `orders.DLQ` */
  readonly deadLetterSuffix: string;
}

export const DEFAULT_LADDER_DELAYS = ["5s", "1m", "10m"] as const;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `"5s"`, `"1m"`, `"10m"`, `"1h"`, `"250ms"` or a number of ms → milliseconds. */
export function parseDelay(delay: string | number): number {
  if (typeof delay === "number") {
    if (!Number.isFinite(delay) || delay <= 0)
      throw new RangeError(`retry delay must be > 0 ms, got ${delay}`);
    return Math.round(delay);
  }
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(delay.trim());
  if (!m) throw new RangeError(`retry delay '${delay}' is not like 500ms, 5s, 1m, 10m, 1h`);
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (ms <= 0) throw new RangeError(`retry delay must be > 0, got '${delay}'`);
  return ms;
}

/**
 * The shortest exact label: 5000 → "5s", 60000 → "1m", 600000 → "10m", 1500 → "1500ms". Hours are
 * the largest unit (86400000 → "24h"), as in the CDK's topic names (lib/cdk/retryLadder.ts).
 */
export function formatDelay(ms: number): string {
  for (const unit of ["h", "m", "s"] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

/** Creates a retry ladder from its delays. */
export function createRetryLadder(
  options: {
    delays?: ReadonlyArray<string | number>;
    retrySeparator?: string;
    deadLetterSuffix?: string;
  } = {},
): RetryLadder {
  return {
    delaysMs: (options.delays ?? DEFAULT_LADDER_DELAYS).map(parseDelay),
    retrySeparator: options.retrySeparator ?? ".retry.",
    deadLetterSuffix: options.deadLetterSuffix ?? ".DLQ",
  };
}

export function retryTopicName(ladder: RetryLadder, baseTopic: string, delayMs: number): string {
  return `${baseTopic}${ladder.retrySeparator}${formatDelay(delayMs)}`;
}

export function deadLetterTopicName(ladder: RetryLadder, baseTopic: string): string {
  return `${baseTopic}${ladder.deadLetterSuffix}`;
}

/** Every topic the ladder of `baseTopic` uses: retry topics (deduplicated, in order) then the DLQ. */
export function ladderTopics(
  ladder: RetryLadder,
  baseTopic: string,
): { retry: string[]; deadLetter: string } {
  const retry = [...new Set(ladder.delaysMs.map((d) => retryTopicName(ladder, baseTopic, d)))];
  return { retry, deadLetter: deadLetterTopicName(ladder, baseTopic) };
}

export type TopicRole =
  | { readonly kind: "main"; readonly baseTopic: string }
  | { readonly kind: "retry"; readonly baseTopic: string; readonly delayMs: number }
  | { readonly kind: "dead-letter"; readonly baseTopic: string };

/**
 * What a topic is on this ladder. A retry topic is recognised only for a delay the ladder has, so
 * a business topic that happens to contain ".retry." is not mistaken for one.
 */
export function topicRole(ladder: RetryLadder, topic: string): TopicRole {
  if (topic.endsWith(ladder.deadLetterSuffix) && topic.length > ladder.deadLetterSuffix.length) {
    return { kind: "dead-letter", baseTopic: topic.slice(0, -ladder.deadLetterSuffix.length) };
  }
  const at = topic.lastIndexOf(ladder.retrySeparator);
  if (at > 0) {
    const label = topic.slice(at + ladder.retrySeparator.length);
    const delayMs = ladder.delaysMs.find((d) => formatDelay(d) === label);
    if (delayMs !== undefined) return { kind: "retry", baseTopic: topic.slice(0, at), delayMs };
  }
  return { kind: "main", baseTopic: topic };
}

/** Where a failed Kafka record goes: a retry topic or the dead-letter topic. */
export type Route =
  | {
      readonly kind: "retry";
      readonly topic: string;
      /** The record's new `x-retry-count` (failures so far, this one included). */
      readonly retryCount: number;
      readonly delayMs: number;
    }
  | {
      readonly kind: "dead-letter";
      readonly topic: string;
      readonly retryCount: number;
      readonly reason: "permanent" | "exhausted";
    };

/**
 * Where a failed record goes next. `previousRetryCount` is the record's `x-retry-count` (0 on the
 * main topic). A permanent error skips the ladder; a transient one climbs a rung until none is left.
 * A `contended` record (its key is leased by another consumer right now) has not failed at all: it
 * goes back onto the ladder without using up an attempt, so a crash elsewhere can never push a good
 * record into the dead-letter topic; the other holder's lease always ends.
 */
export function routeFailure(input: {
  readonly ladder: RetryLadder;
  readonly baseTopic: string;
  readonly previousRetryCount: number;
  readonly errorKind: "permanent" | "transient" | "contended";
}): Route {
  const { ladder, baseTopic, errorKind } = input;
  const previous = Number.isSafeInteger(input.previousRetryCount) ? Math.max(0, input.previousRetryCount) : 0;
  const retryCount = previous + 1;
  if (errorKind === "permanent") {
    return {
      kind: "dead-letter",
      topic: deadLetterTopicName(ladder, baseTopic),
      retryCount,
      reason: "permanent",
    };
  }
  if (errorKind === "contended" && ladder.delaysMs.length > 0) {
    const rung = Math.min(previous, ladder.delaysMs.length - 1);
    const delayMs = ladder.delaysMs[rung]!;
    return {
      kind: "retry",
      topic: retryTopicName(ladder, baseTopic, delayMs),
      retryCount: previous,
      delayMs,
    };
  }
  const delayMs = ladder.delaysMs[previous];
  if (delayMs === undefined) {
    return {
      kind: "dead-letter",
      topic: deadLetterTopicName(ladder, baseTopic),
      retryCount,
      reason: "exhausted",
    };
  }
  return { kind: "retry", topic: retryTopicName(ladder, baseTopic, delayMs), retryCount, delayMs };
}

export type DueDecision =
  | { readonly kind: "due" }
  /** Sleep this long, then process. */
  | { readonly kind: "wait"; readonly waitMs: number }
  /** Not due within this invocation's time: leave it (and its partition's later records) for redelivery. */
  | { readonly kind: "not-yet"; readonly dueAtMs: number };

/**
 * The retry consumer's gate: a record on a rung of `delayMs` is due at its timestamp (when it was
 * routed) plus the delay. It may wait for it only if that leaves `reserveMs` of the invocation for
 * the work itself.
 */
export function dueDecision(input: {
  readonly recordTimestampMs: number;
  readonly delayMs: number;
  readonly nowMs: number;
  readonly remainingMs: number;
  readonly reserveMs: number;
  /** Never sleep longer than this in one go. @default Infinity */
  readonly maxWaitMs?: number;
}): DueDecision {
  const dueAtMs = input.recordTimestampMs + input.delayMs;
  const waitMs = dueAtMs - input.nowMs;
  if (waitMs <= 0) return { kind: "due" };
  const budget = Math.min(input.remainingMs - input.reserveMs, input.maxWaitMs ?? Number.POSITIVE_INFINITY);
  if (waitMs <= budget) return { kind: "wait", waitMs };
  return { kind: "not-yet", dueAtMs };
}

/**
 * The ladder from the CDK's `KAFKA_RETRY_LADDER` (`{ topic, retries: [{ topic, delayMs }],
 * deadLetterTopic }`), the same declaration that created the topics. Throws if the declared topic
 * names do not follow this ladder's naming, so the consumer and the topics cannot drift apart.
 */
export function ladderFromRuntimeConfig(config: string | unknown): RetryLadder {
  const c = (typeof config === "string" ? JSON.parse(config) : config) as {
    topic?: unknown;
    retries?: unknown;
    deadLetterTopic?: unknown;
  };
  if (typeof c?.topic !== "string" || !Array.isArray(c.retries) || typeof c.deadLetterTopic !== "string") {
    throw new ConsumerConfigError(
      "KAFKA_RETRY_LADDER must be { topic, retries: [{ topic, delayMs }], deadLetterTopic }",
    );
  }
  const retries = c.retries as { topic?: unknown; delayMs?: unknown }[];
  const ladder = createRetryLadder({ delays: retries.map((r) => Number(r.delayMs)) });
  retries.forEach((r, i) => {
    const expected = retryTopicName(ladder, c.topic as string, ladder.delaysMs[i]!);
    if (r.topic !== expected)
      throw new ConsumerConfigError(`KAFKA_RETRY_LADDER: retry topic ${String(r.topic)} ≠ ${expected}`);
  });
  const dlq = deadLetterTopicName(ladder, c.topic);
  if (c.deadLetterTopic !== dlq)
    throw new ConsumerConfigError(`KAFKA_RETRY_LADDER: dead-letter topic ${c.deadLetterTopic} ≠ ${dlq}`);
  return ladder;
}
