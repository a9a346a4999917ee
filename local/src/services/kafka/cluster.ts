import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Kafka, logLevel } from "kafkajs";
// The library's kafkajs 2.2.4 fixes are side effects of its Kafka entry point (lib/kafka/config.ts).
import "reliable-consumers/kafka";
import { drain, requireCommand, spawnGuarded, stopChild, waitForLine } from "../../childProcess.ts";
import { ownedTempDir } from "../../ownedTempDir.ts";
import { type KafkaDistribution, kafkaDistribution } from "./distribution.ts";

/**
 * A real Apache Kafka 4.x cluster in KRaft mode on this machine, in two shapes:
 *
 * - **1 broker** (`brokers: 1`): one JVM in combined mode (broker and controller), replication
 *   factor 1. The integration tests share one for the whole run.
 * - **3 brokers** (`brokers: 3`): three broker JVMs and one controller-only JVM, replication factor
 *   3 and `min.insync.replicas=2`, as MSK sets them for a 3-AZ cluster. The controller is its own
 *   process, as on MSK, so stopping brokers never takes the quorum with it: with two brokers down
 *   the controller fences them, shrinks every ISR to the survivor, and an `acks=all` produce gets
 *   NOT_ENOUGH_REPLICAS (with combined nodes it would lose the quorum and only time out).
 *
 * Every listener is on 127.0.0.1 and a free port, every node has its own data dir under a fresh
 * temp dir (formatted with a random cluster id), and each JVM dies with this process (see
 * GuardedKafka.java and childProcess.ts). Topics are never auto-created (`auto.create.topics.enable
 * =false`, MSK's default): create them as declared, with the admin client.
 */
export interface KafkaCluster {
  /** Bootstrap servers, `127.0.0.1:<port>` of each broker. */
  readonly brokers: string[];
  readonly clusterId: string;
  /** Broker node ids, 1..n. */
  readonly brokerIds: number[];
  /** `default.replication.factor` (and that of the internal topics). */
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
  /** The data dir of all nodes (one sub-dir each, with its `server.log`). */
  readonly dataDir: string;
  /** Where the time of `startKafkaCluster` went, in ms. */
  readonly timings: { readonly resolveMs: number; readonly formatMs: number; readonly startMs: number };
  /** Whether this start ran Maven (a cold start), or found the classpath cached (warm). */
  readonly downloaded: boolean;
  /** The PID of a node's JVM while it runs. */
  pid(nodeId: number): number | undefined;
  /** The address of a broker's listener (kept across its restarts). */
  address(nodeId: number): string;
  /**
   * Stops one broker. SIGTERM is a controlled shutdown (leadership moves off it first, as in a
   * rolling restart); SIGKILL is a crash (the controller fences it after the session timeout).
   */
  stopBroker(nodeId: number, options?: { signal?: "SIGTERM" | "SIGKILL" }): Promise<void>;
  /** Starts a stopped broker again on its port and data dir; resolves once it serves. */
  startBroker(nodeId: number): Promise<void>;
  /**
   * Moves a partition's leadership to another of its in-sync replicas, every broker staying up (a
   * reorder of its replicas, then a preferred-leader election: what an operator's rebalance does).
   */
  moveLeader(topic: string, partition: number, toNodeId: number): Promise<void>;
  /** Stops every node and deletes the data dir (unless it was given). */
  stop(): Promise<void>;
}

export interface KafkaClusterOptions {
  /** 1 (combined mode) or 3 (three brokers and a controller). @default 1 */
  readonly brokers?: 1 | 3;
  /** Max heap of each broker JVM, in MiB. Small by default: 2 cores run many JVMs. @default 384 */
  readonly heapMb?: number;
  /**
   * Full JIT (C1 and C2). Off by default: C1 alone starts faster and burns less CPU on a shared
   * 2-core machine; benchmarks turn it on so the broker runs at production speed. @default false
   */
  readonly fullJit?: boolean;
  /** Keep the nodes' data here (not deleted by stop). @default a fresh temp dir, deleted by stop */
  readonly dataDir?: string;
  /** Per node start, and for the cluster to settle. @default 90000 */
  readonly startTimeoutMs?: number;
  /** Broker settings to add or override (`key: value`), e.g. a retention for every topic. */
  readonly brokerConfig?: Readonly<Record<string, string | number | boolean>>;
}

export const KAFKA_CLUSTER_DEFAULTS = {
  brokers: 1,
  heapMb: 384,
  controllerHeapMb: 192,
  fullJit: false,
  startTimeoutMs: 90_000,
  /** How long a controlled shutdown (SIGTERM) may take before we SIGKILL the broker. */
  controlledShutdownMs: 30_000,
} as const;

const CONTROLLER_ID = 0;
const STARTED = /Kafka Server started/;
const JAVA_HINT = "apt-get install -y openjdk-17-jre-headless (Kafka 4 needs Java 17+)";

interface NodeSpec {
  readonly nodeId: number;
  readonly roles: "broker,controller" | "broker" | "controller";
  /** The PLAINTEXT listener, on broker nodes. */
  readonly port?: number;
  /** The CONTROLLER listener, on controller nodes. */
  readonly controllerPort?: number;
  readonly dir: string;
  readonly properties: string;
}

/** Ports the OS says are free now; held open together so they are distinct. */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<import("node:net").Server>((resolve, reject) => {
          const server = createServer();
          server.once("error", reject);
          server.listen(0, "127.0.0.1", () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as import("node:net").AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

const DATA_DIR_PREFIX = "rc-kafka-";

/** Kafka's own cluster-id format: 16 random bytes in URL-safe base64, never starting with '-'. */
function randomClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}

function serverProperties(
  node: Omit<NodeSpec, "properties">,
  voters: string,
  shape: { replicationFactor: number; minIsr: number },
  extra: Readonly<Record<string, string | number | boolean>>,
): string {
  const isBroker = node.roles !== "controller";
  const isController = node.roles !== "broker";
  const listeners = [
    ...(isBroker ? [`PLAINTEXT://127.0.0.1:${node.port}`] : []),
    ...(isController ? [`CONTROLLER://127.0.0.1:${node.controllerPort}`] : []),
  ];
  const rf = shape.replicationFactor;
  const config: Record<string, string | number | boolean> = {
    "process.roles": node.roles,
    "node.id": node.nodeId,
    "controller.quorum.voters": voters,
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    listeners: listeners.join(","),
    ...(isBroker
      ? {
          "advertised.listeners": `PLAINTEXT://127.0.0.1:${node.port}`,
          "inter.broker.listener.name": "PLAINTEXT",
        }
      : {}),
    "log.dirs": join(node.dir, "data"),
    // MSK's defaults: no auto-creation; RF 3 and min ISR 2 on a 3-AZ cluster.
    "auto.create.topics.enable": false,
    "default.replication.factor": rf,
    "min.insync.replicas": shape.minIsr,
    "offsets.topic.replication.factor": rf,
    "transaction.state.log.replication.factor": rf,
    "transaction.state.log.min.isr": shape.minIsr,
    "share.coordinator.state.topic.replication.factor": rf,
    "share.coordinator.state.topic.min.isr": shape.minIsr,
    "unclean.leader.election.enable": false,
    // Light internal topics (default 50 partitions each): created on first use, on a loaded machine.
    "offsets.topic.num.partitions": 8,
    "transaction.state.log.num.partitions": 4,
    "share.coordinator.state.topic.num.partitions": 4,
    // A test's consumer joins at once instead of after 3 s.
    "group.initial.rebalance.delay.ms": 0,
    // A crashed broker is fenced (and dropped from every ISR) after 6 s instead of 9 s.
    "broker.heartbeat.interval.ms": 1_000,
    "broker.session.timeout.ms": 6_000,
    "replica.lag.time.max.ms": 10_000,
    // Fewer threads than the defaults (sized for a dedicated server): 2 cores, up to 4 JVMs.
    "num.network.threads": 2,
    "num.io.threads": 4,
    "num.replica.fetchers": 1,
    "background.threads": 4,
    "num.recovery.threads.per.data.dir": 1,
    "log.cleaner.threads": 1,
    ...extra,
  };
  return `${Object.entries(config)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n")}\n`;
}

function jvmArgs(dist: KafkaDistribution, node: NodeSpec, options: KafkaClusterOptions): string[] {
  const heap =
    node.roles === "controller"
      ? KAFKA_CLUSTER_DEFAULTS.controllerHeapMb
      : (options.heapMb ?? KAFKA_CLUSTER_DEFAULTS.heapMb);
  return [
    `-Xmx${heap}m`,
    "-Xms64m",
    "-XX:+UseSerialGC",
    ...((options.fullJit ?? KAFKA_CLUSTER_DEFAULTS.fullJit) ? [] : ["-XX:TieredStopAtLevel=1"]),
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    // Plain IPv4 sockets on 127.0.0.1 (not the IPv4-mapped [::ffff:127.0.0.1] of a dual stack).
    "-Djava.net.preferIPv4Stack=true",
    `-Dlog4j2.configurationFile=${dist.log4jConfig}`,
    `-Dkafka.logs.dir=${node.dir}`,
    "-cp",
    dist.classpath,
  ];
}

function logTail(node: NodeSpec): string {
  const file = join(node.dir, "server.log");
  return existsSync(file) ? readFileSync(file, "utf8").slice(-4000) : "(no server.log)";
}

/** `kafka-storage format`: writes meta.properties (and the bootstrap metadata) into the node's dir. */
async function format(
  dist: KafkaDistribution,
  node: NodeSpec,
  clusterId: string,
  timeoutMs: number,
): Promise<void> {
  const child = spawnGuarded("java", [
    ...jvmArgs(dist, node, { heapMb: 128 }).filter((a) => !a.startsWith("-Xmx")),
    "-Xmx128m",
    "kafka.tools.StorageTool",
    "format",
    "-t",
    clusterId,
    "-c",
    join(node.dir, "server.properties"),
  ]);
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearTimeout(timer);
  if (code !== 0)
    throw new Error(`formatting Kafka node ${node.nodeId} failed (exit ${code}):\n${output.slice(-4000)}`);
}

async function launch(
  dist: KafkaDistribution,
  node: NodeSpec,
  options: KafkaClusterOptions,
): Promise<ChildProcess> {
  const child = spawnGuarded("java", [
    ...jvmArgs(dist, node, options),
    "GuardedKafka",
    join(node.dir, "server.properties"),
  ]);
  try {
    await waitForLine(
      child,
      STARTED,
      options.startTimeoutMs ?? KAFKA_CLUSTER_DEFAULTS.startTimeoutMs,
      `Kafka node ${node.nodeId}`,
    );
  } catch (error) {
    await stopChild(child);
    throw new Error(`${(error as Error).message}\nserver.log:\n${logTail(node)}`);
  }
  drain(child);
  return child;
}

/**
 * Waits until every broker is registered, the group coordinator answers (it creates
 * __consumer_offsets) and an idempotent producer gets its id (it creates __transaction_state), so
 * the first test to use either does not wait for "the coordinator is loading".
 */
async function settle(brokers: string[], count: number, timeoutMs: number): Promise<void> {
  const client = new Kafka({ clientId: "kafka-cluster-launcher", brokers, logLevel: logLevel.NOTHING });
  const admin = client.admin();
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  await admin.connect();
  try {
    for (;;) {
      try {
        const cluster = await admin.describeCluster();
        if (cluster.brokers.length >= count) {
          await admin.describeGroups(["kafka-cluster-launcher-warmup"]);
          const producer = client.producer({ idempotent: true, retry: { retries: 30, maxRetryTime: 500 } });
          await producer.connect();
          await producer.disconnect();
          return;
        }
        last = new Error(`${cluster.brokers.length} of ${count} brokers registered`);
      } catch (error) {
        last = error;
      }
      if (Date.now() > deadline) throw new Error(`Kafka cluster did not settle: ${String(last)}`);
      await sleep(200);
    }
  } finally {
    await admin.disconnect();
  }
}

/**
 * Starts a Kafka cluster (see KafkaCluster); resolves once every broker serves. The free ports are
 * picked before the JVMs bind them, so another process can take one meanwhile: then it starts
 * again on fresh ports (up to 3 times).
 */
export async function startKafkaCluster(options: KafkaClusterOptions = {}): Promise<KafkaCluster> {
  requireCommand("java", JAVA_HINT);
  const t0 = performance.now();
  const dist = await kafkaDistribution();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(dist, options, t0);
    } catch (error) {
      if (attempt >= 3 || !/Address already in use|BindException/.test(String(error))) throw error;
    }
  }
}

/** The nodes of a cluster of `count` brokers: one combined node, or a controller and three brokers. */
function nodeSpecs(
  ports: ReadonlyArray<number>,
  count: number,
  dataDir: string,
  shape: { replicationFactor: number; minIsr: number },
  options: KafkaClusterOptions,
): NodeSpec[] {
  const controllerPort = ports[count] as number;
  const specs: Omit<NodeSpec, "properties">[] =
    count === 1
      ? [
          {
            nodeId: 1,
            roles: "broker,controller",
            port: ports[0] as number,
            controllerPort,
            dir: join(dataDir, "node-1"),
          },
        ]
      : [
          {
            nodeId: CONTROLLER_ID,
            roles: "controller",
            controllerPort,
            dir: join(dataDir, `node-${CONTROLLER_ID}`),
          },
          ...ports.slice(0, count).map((port, i) => ({
            nodeId: i + 1,
            roles: "broker" as const,
            port,
            dir: join(dataDir, `node-${i + 1}`),
          })),
        ];
  const controllerId = count === 1 ? 1 : CONTROLLER_ID;
  const voters = `${controllerId}@127.0.0.1:${controllerPort}`;
  const nodes = specs.map(
    (spec): NodeSpec => ({
      ...spec,
      properties: serverProperties(spec, voters, shape, options.brokerConfig ?? {}),
    }),
  );
  return nodes;
}

async function startOnce(
  dist: KafkaDistribution,
  options: KafkaClusterOptions,
  t0: number,
): Promise<KafkaCluster> {
  const t1 = performance.now();
  const count = options.brokers ?? KAFKA_CLUSTER_DEFAULTS.brokers;
  if (count !== 1 && count !== 3) throw new Error(`brokers must be 1 or 3, got ${count}`);
  const shape = { replicationFactor: count, minIsr: count === 1 ? 1 : 2 };
  const timeoutMs = options.startTimeoutMs ?? KAFKA_CLUSTER_DEFAULTS.startTimeoutMs;
  const ownsDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? ownedTempDir(DATA_DIR_PREFIX);
  const clusterId = randomClusterId();

  const nodes = nodeSpecs(await freePorts(count + 1), count, dataDir, shape, options);
  for (const node of nodes) {
    mkdirSync(node.dir, { recursive: true });
    writeFileSync(join(node.dir, "server.properties"), node.properties);
  }

  const running = new Map<number, ChildProcess>();
  const stopAll = async () => {
    await Promise.allSettled([...running.values()].map((child) => stopChild(child)));
    running.clear();
  };
  let formatMs = 0;
  try {
    await Promise.all(nodes.map((node) => format(dist, node, clusterId, timeoutMs)));
    formatMs = performance.now() - t1;
    await Promise.all(
      nodes.map(async (node) => {
        running.set(node.nodeId, await launch(dist, node, options));
      }),
    );
  } catch (error) {
    await stopAll();
    if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const brokerNodes = nodes.filter((n) => n.port !== undefined);
  const brokers = brokerNodes.map((n) => `127.0.0.1:${n.port}`);
  try {
    await settle(brokers, brokerNodes.length, timeoutMs);
  } catch (error) {
    await stopAll();
    if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const t2 = performance.now();

  const brokerNode = (nodeId: number): NodeSpec => {
    const node = brokerNodes.find((n) => n.nodeId === nodeId);
    if (!node)
      throw new Error(`no broker ${nodeId}; brokers are ${brokerNodes.map((n) => n.nodeId).join(", ")}`);
    return node;
  };

  return {
    brokers,
    clusterId,
    brokerIds: brokerNodes.map((n) => n.nodeId),
    replicationFactor: shape.replicationFactor,
    minInsyncReplicas: shape.minIsr,
    dataDir,
    timings: {
      resolveMs: Math.round(t1 - t0),
      formatMs: Math.round(formatMs),
      startMs: Math.round(t2 - t1 - formatMs),
    },
    downloaded: dist.resolved,
    pid: (nodeId) => running.get(nodeId)?.pid,
    address: (nodeId) => `127.0.0.1:${brokerNode(nodeId).port}`,
    async stopBroker(nodeId, { signal = "SIGTERM" } = {}) {
      brokerNode(nodeId);
      const child = running.get(nodeId);
      if (!child) return;
      running.delete(nodeId);
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      if (child.exitCode === null && child.signalCode === null) {
        // Not stopChild: closing stdin would make the watchdog halt the JVM, skipping the
        // controlled shutdown that SIGTERM asks for.
        child.kill(signal);
        const timer = setTimeout(() => child.kill("SIGKILL"), KAFKA_CLUSTER_DEFAULTS.controlledShutdownMs);
        await exited;
        clearTimeout(timer);
      }
    },
    async startBroker(nodeId) {
      const node = brokerNode(nodeId);
      if (running.has(nodeId)) return;
      running.set(nodeId, await launch(dist, node, options));
    },
    async moveLeader(topic, partition, toNodeId) {
      brokerNode(toNodeId);
      const child = spawnGuarded("java", [
        ...jvmArgs(dist, { ...brokerNode(toNodeId), roles: "controller" }, { heapMb: 128 }),
        "MoveLeader",
        brokers.join(","),
        topic,
        String(partition),
        String(toNodeId),
      ]);
      let output = "";
      child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
      child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      if (code !== 0 || !output.includes("LEADER_MOVED"))
        throw new Error(
          `moving the leader of ${topic}-${partition} to ${toNodeId} failed (exit ${code}):\n${output.slice(-3000)}`,
        );
    },
    async stop() {
      await stopAll();
      if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
