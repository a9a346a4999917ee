/**
 * Runs a batch's records with bounded concurrency while keeping per-key order: records that share
 * a key (an SQS message group, a Kafka partition, a Kafka key) run one after another in batch
 * order; records of different keys, or with no key, run side by side. No AWS here.
 */
export interface KeyedTask<T> {
  /** Ordering key; `undefined` means "unordered". */
  readonly key: string | undefined;
  run(): Promise<T>;
}

export type TaskOutcome<T> =
  | { readonly status: "fulfilled"; readonly value: T }
  | { readonly status: "rejected"; readonly reason: unknown }
  /** Not started: an earlier task of the same key failed, or time ran out. */
  | { readonly status: "skipped"; readonly reason: "key-failed" | "out-of-time" };

export interface KeyedRunOptions {
  /** At most this many tasks run at once. @default 10 */
  readonly concurrency?: number;
  /** When a task of a key fails, skip that key's later tasks (FIFO groups, Kafka partitions). @default true */
  readonly stopKeyOnFailure?: boolean;
  /** Asked before each task starts; `false` skips it and everything not yet started. */
  readonly canStart?: () => boolean;
}

export interface KeyedRunOptionsOf<T> extends KeyedRunOptions {
  /**
   * Whether a task's result stops its key's lane, as a rejection does (an unfinished record in a
   * FIFO group or a Kafka partition). So callers return outcomes instead of throwing them: a
   * rejected task then only ever means a bug. @default never
   */
  readonly stopsLane?: (value: T) => boolean;
}

export async function runKeyed<T>(
  tasks: ReadonlyArray<KeyedTask<T>>,
  options: KeyedRunOptionsOf<T> = {},
): Promise<TaskOutcome<T>[]> {
  const concurrency = Math.max(1, options.concurrency ?? 10);
  const stopKeyOnFailure = options.stopKeyOnFailure ?? true;
  const canStart = options.canStart ?? (() => true);
  const stopsLane = options.stopsLane ?? (() => false);
  const outcomes: TaskOutcome<T>[] = new Array(tasks.length);

  // One lane per key, in order of first appearance; an unkeyed task is a lane of its own.
  const lanes: number[][] = [];
  const laneOfKey = new Map<string, number[]>();
  tasks.forEach((task, index) => {
    if (task.key === undefined) {
      lanes.push([index]);
      return;
    }
    let lane = laneOfKey.get(task.key);
    if (!lane) {
      lane = [];
      laneOfKey.set(task.key, lane);
      lanes.push(lane);
    }
    lane.push(index);
  });

  let outOfTime = false;
  let nextLane = 0;
  const worker = async () => {
    while (nextLane < lanes.length) {
      const lane = lanes[nextLane++]!;
      let failed = false;
      for (const index of lane) {
        if (failed) {
          outcomes[index] = { status: "skipped", reason: "key-failed" };
          continue;
        }
        if (outOfTime || !canStart()) {
          outOfTime = true;
          outcomes[index] = { status: "skipped", reason: "out-of-time" };
          continue;
        }
        let stops: boolean;
        try {
          const value = await tasks[index]!.run();
          outcomes[index] = { status: "fulfilled", value };
          stops = stopsLane(value);
        } catch (reason) {
          outcomes[index] = { status: "rejected", reason };
          stops = true;
        }
        failed = stops && stopKeyOnFailure && tasks[index]!.key !== undefined;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, lanes.length) }, worker));
  return outcomes;
}
