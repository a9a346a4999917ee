import { drain, requireCommand, spawnGuarded, stopChild, waitForLine } from "../../childProcess.ts";

/** A running librdkafka mock cluster on 127.0.0.1. */
export interface KafkaMock {
  /** `127.0.0.1:<port>` of each mock broker. */
  readonly brokers: string[];
  readonly pid: number;
  stop(): Promise<void>;
}

/** Options of `startKafkaMock`. */
export interface KafkaMockOptions {
  /** @default 3 */
  readonly brokers?: number;
  /** @default 10000 */
  readonly startTimeoutMs?: number;
}

/**
 * Starts librdkafka's mock cluster through `kcat`. kcat runs as a producer on our stdin pipe, so
 * the cluster lives exactly as long as this process keeps the pipe open (EOF ends it).
 * Known gaps of the mock: no CreateTopics and no idempotent producer; topics appear on first use.
 */
export async function startKafkaMock(options: KafkaMockOptions = {}): Promise<KafkaMock> {
  requireCommand("kcat", "apt-get install -y kcat (the librdkafka mock cluster comes with it)");
  const child = spawnGuarded("kcat", [
    "-b",
    "127.0.0.1:1",
    "-X",
    `test.mock.num.brokers=${options.brokers ?? 3}`,
    "-d",
    "mock",
    "-P",
    "-t",
    "__mock_keepalive",
  ]);
  const match = await waitForLine(
    child,
    /bootstrap\.servers=(\S+)/,
    options.startTimeoutMs ?? 10_000,
    "kcat mock cluster",
  );
  // -d mock logs every request; keep the pipe drained so kcat never blocks on it.
  drain(child);
  const brokers = (match[1] ?? "").split(",").filter(Boolean);
  if (brokers.some((b) => !b.startsWith("127.0.0.1:"))) {
    await stopChild(child);
    throw new Error(`kcat mock cluster is not on loopback: ${brokers.join(",")}`);
  }
  return { brokers, pid: child.pid ?? -1, stop: () => stopChild(child) };
}
