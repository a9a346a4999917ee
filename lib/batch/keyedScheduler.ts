/**
 * Runs a batch's records with bounded concurrency while keeping per-key order: records that share
 * a key (an SQS message group, a Kafka partition, a Kafka key) run one after another in batch
 * order; records of different keys, or with no key, run side by side. No AWS here.
 */
export interface KeyedTask<T> {
  /** Ordering key; `undefined` means "unordered". */
  readonly key: string | undefined;
  /**
   * Settles when the task can start without waiting (its dedup claim, sent ahead, is answered). A
   * lane takes a slot only once its first task is ready, and ready lanes start in the order they
   * became ready: a slot is never held by a record waiting on a claim while records whose claims
   * are in wait for a slot. Never rejects (a rejection counts as ready). @default ready now
   */
  readonly ready?: Promise<unknown>;
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
  const takeLane = readyLanes(lanes, (lane) => tasks[lane[0]!]!.ready);
  const worker = async () => {
    for (let lane = await takeLane(); lane; lane = await takeLane()) {
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

/**
 * Hands out lanes in the order their readiness settles (those ready from the start first, in batch
 * order); `undefined` once every lane has been handed out. Each lane that turns ready wakes one
 * waiting worker; the last lane handed out wakes them all, to end.
 */
function readyLanes<L>(lanes: ReadonlyArray<L>, readyOf: (lane: L) => Promise<unknown> | undefined) {
  const ready: L[] = [];
  let taken = 0;
  const waiters: Array<() => void> = [];
  for (const lane of lanes) {
    const readiness = readyOf(lane);
    const start = () => {
      ready.push(lane);
      waiters.shift()?.();
    };
    if (readiness) void readiness.then(start, start);
    else ready.push(lane);
  }
  return async (): Promise<L | undefined> => {
    while (taken === ready.length) {
      if (taken === lanes.length) return undefined;
      await new Promise<void>((wake) => waiters.push(wake));
    }
    const lane = ready[taken++];
    if (taken === lanes.length) for (const wake of waiters.splice(0)) wake();
    return lane;
  };
}
