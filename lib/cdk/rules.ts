/**
 * The library's configuration rules, as pure functions over seconds, so they can be tested without a
 * synth and reused by anything that configures a consumer. The constructs call them and let the
 * error fail `cdk synth`; each message says what is wrong, why it matters, and how to fix it.
 */

/** A rule of the library was broken by the CDK configuration. */
export class ConsumerRuleError extends Error {
  override readonly name = "ConsumerRuleError";
}

/** `90061` → `"1d 1m 1s"`. */
export function formatSeconds(seconds: number): string {
  if (seconds === 0) return "0s";
  const units: Array<[string, number]> = [
    ["d", 86_400],
    ["h", 3_600],
    ["m", 60],
    ["s", 1],
  ];
  let rest = Math.round(seconds);
  const parts: string[] = [];
  for (const [unit, size] of units) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.join(" ");
}

/**
 * Lambda never extends an SQS message's visibility. AWS recommends a visibility timeout of at
 * least 6 × the function timeout; the batching window adds to the time a message can sit in a
 * poller's batch before the function even starts.
 */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/** SQS's maximum visibility timeout (12 h). */
export const MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200;

export function requiredVisibilityTimeoutSeconds(
  functionTimeoutSeconds: number,
  batchingWindowSeconds = 0,
): number {
  return VISIBILITY_TIMEOUT_FACTOR * functionTimeoutSeconds + batchingWindowSeconds;
}

export interface VisibilityCheck {
  readonly queue: string;
  readonly visibilityTimeoutSeconds: number;
  readonly consumer: string;
  readonly functionTimeoutSeconds: number;
  readonly batchingWindowSeconds?: number;
}

/** Throws unless visibility ≥ 6 × function timeout + batching window. */
export function checkVisibilityTimeout(c: VisibilityCheck): void {
  const window = c.batchingWindowSeconds ?? 0;
  const required = requiredVisibilityTimeoutSeconds(c.functionTimeoutSeconds, window);
  if (required > MAX_VISIBILITY_TIMEOUT_SECONDS) {
    throw new ConsumerRuleError(
      `Consumer "${c.consumer}" of queue "${c.queue}": ${VISIBILITY_TIMEOUT_FACTOR} × timeout ` +
        `(${formatSeconds(c.functionTimeoutSeconds)}) + batching window (${formatSeconds(window)}) = ` +
        `${formatSeconds(required)} exceeds SQS's maximum visibility timeout of 12h. Shorten the function timeout.`,
    );
  }
  if (c.visibilityTimeoutSeconds < required) {
    throw new ConsumerRuleError(
      `Queue "${c.queue}" has a visibility timeout of ${formatSeconds(c.visibilityTimeoutSeconds)} (${c.visibilityTimeoutSeconds}s), ` +
        `but its consumer "${c.consumer}" needs at least ${VISIBILITY_TIMEOUT_FACTOR} × function timeout ` +
        `(${formatSeconds(c.functionTimeoutSeconds)}) + batching window (${formatSeconds(window)}) = ` +
        `${formatSeconds(required)} (${required}s). Lambda never extends visibility, so a shorter timeout ` +
        `lets SQS hand a message to a second invocation while the first still works on it. ` +
        `Raise the queue's visibility timeout (or leave it unset so QueueWithDlq derives it from consumerTimeout), ` +
        `or lower the function timeout.`,
    );
  }
}

/** One way a message can come back to a consumer, and for how long. */
export interface RetryPath {
  /** The consumer (dedup scope) the path belongs to. */
  readonly consumer: string;
  /** E.g. `queue orders (retention 4d, DLQ 14d)`. */
  readonly description: string;
  readonly seconds: number;
}

export interface SqsRetryPathInput {
  readonly retentionSeconds: number;
  readonly dlqRetentionSeconds: number;
  readonly fifo: boolean;
  /** How long after a failure you may still replay by hand (beyond the retention). @default 0 */
  readonly plannedReplaySeconds?: number;
}

/**
 * How long after its first send a message can still reach an SQS consumer.
 *
 * On a standard queue a message's expiry always counts from its original enqueue time, also in the
 * DLQ, so the longest a copy lives is max(retention, DLQ retention). On a FIFO queue the enqueue
 * time resets when the message moves to the DLQ, so the two add up. A redrive from the DLQ back to
 * the source is a planned replay; declare how long after you may still do one.
 */
export function sqsRetryPathSeconds(i: SqsRetryPathInput): number {
  const retained = i.fifo
    ? i.retentionSeconds + i.dlqRetentionSeconds
    : Math.max(i.retentionSeconds, i.dlqRetentionSeconds);
  return retained + (i.plannedReplaySeconds ?? 0);
}

export interface KafkaLadderStage {
  readonly topic: string;
  /** Delay before a record in this topic is retried (0 for the main topic). */
  readonly delaySeconds: number;
  readonly retentionSeconds: number;
}

/**
 * How long after its first failure a Kafka record can still reach the consumer: for each stage of
 * the ladder (main topic, retry topics, dead-letter topic), the delays before it plus its retention
 * (a consumer-group reset or a replay from that topic re-reads anything still retained); the
 * longest stage wins. Plus any planned replay beyond retention.
 */
export function kafkaRetryPathSeconds(stages: readonly KafkaLadderStage[], plannedReplaySeconds = 0): number {
  let delayBefore = 0;
  let longest = 0;
  for (const stage of stages) {
    delayBefore += stage.delaySeconds;
    longest = Math.max(longest, delayBefore + stage.retentionSeconds);
  }
  return longest + plannedReplaySeconds;
}

/**
 * The dedup window must be longer than the longest way a message can come back, or a late
 * redelivery or a replay is processed a second time.
 */
export function checkDedupWindow(table: string, windowSeconds: number, paths: readonly RetryPath[]): void {
  const tooLong = paths.filter((p) => p.seconds >= windowSeconds);
  if (tooLong.length === 0) return;
  const longest = Math.max(...tooLong.map((p) => p.seconds));
  const list = tooLong.map(
    (p) => `  - ${p.consumer}: ${p.description} = ${formatSeconds(p.seconds)} (${p.seconds}s)`,
  );
  throw new ConsumerRuleError(
    [
      `Dedup table "${table}" remembers keys for ${formatSeconds(windowSeconds)} (${windowSeconds}s), ` +
        `but these consumers can see a message again later than that:`,
      ...list,
      `A redelivery or replay after the dedup record expired is processed twice. Set the table's ` +
        `windowSeconds above ${longest}s, or shorten the retention / retry ladder / planned replay.`,
    ].join("\n"),
  );
}

/**
 * A construct validation (run at synth, so retry paths added later count) that fails when the
 * window is not longer than every retry path: the one rule both dedup and inbox tables follow.
 */
export function dedupWindowValidation(
  table: string,
  windowSeconds: () => number,
  paths: () => readonly RetryPath[],
): { validate(): string[] } {
  return {
    validate: () => {
      try {
        checkDedupWindow(table, windowSeconds(), paths());
        return [];
      } catch (error) {
        return [(error as Error).message];
      }
    },
  };
}

/**
 * The outbox relay's stream mapping must read each shard with one batch at a time. With a
 * ParallelizationFactor above 1, Lambda keeps order only per item (partition key + sort key), and
 * every outbox event is an item of its own: two events of one aggregate can be in two concurrent
 * batches, and the later one would be published first. (The relay's order check would then hold
 * the later one back for the sweeper, so order holds, but most events of busy aggregates would
 * wait minutes for it.) Scale the relay with more stream shards (table throughput), not the factor.
 */
export function checkRelayParallelization(relay: string, parallelizationFactor: number): void {
  if (parallelizationFactor <= 1) return;
  throw new ConsumerRuleError(
    `Outbox relay "${relay}": parallelizationFactor ${parallelizationFactor} would break order per aggregate. ` +
      `With a factor above 1, Lambda keeps a DynamoDB stream's order only per item, and each outbox event is ` +
      `an item of its own, so two events of one aggregate can be published by concurrent batches in either ` +
      `order. Leave parallelizationFactor at 1 (the default).`,
  );
}
