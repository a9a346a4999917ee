import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { requireCommand } from "../../childProcess.ts";

/**
 * Apache Kafka for the local substrate, resolved from Maven Central. The pom next to this file
 * names the broker (`org.apache.kafka:kafka_2.13`) and a Log4j 2 binding; Maven downloads them once
 * into `~/.m2`, and we keep only the resolved classpath (a list of jar paths in `~/.m2`) in a cache
 * dir keyed on the pom's content. It is not under node_modules because `npm ci` wipes that on every
 * CI run, which would cost a Maven start (5–10 s) per run for nothing.
 */
export interface KafkaDistribution {
  /** The JVM classpath: our small launcher first, then the broker's runtime jars. */
  readonly classpath: string;
  /** The Log4j 2 config every node uses (WARN to a file per node, the readiness line to stdout). */
  readonly log4jConfig: string;
  /** The Kafka version the pom pins. */
  readonly version: string;
  /** Whether this call had to run Maven (first run, or after the pom changed). */
  readonly resolved: boolean;
}

export const KAFKA_INSTALL_HINT =
  "apt-get install -y maven openjdk-17-jdk-headless, then scripts/setup.sh (Kafka from Maven Central)";
const here = dirname(fileURLToPath(import.meta.url));
const POM = join(here, "pom.xml");
/** Our Java helpers, compiled against the broker's jars: the parent-guarded launcher, a leader mover. */
const JAVA_SOURCES = ["GuardedKafka", "MoveLeader"].map((name) => join(here, "java", `${name}.java`));

/**
 * The node's own log goes to `${sys:kafka.logs.dir}/server.log` (WARN and up: enough to debug a
 * failed chaos run, small enough to cost nothing); only "Kafka Server started" reaches stdout, which
 * is how the launcher knows a node is up.
 */
const LOG4J2 = `status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = \${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %m%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = info
logger.started.appenderRef.out.ref = out
`;

function cacheRoot(): string {
  const base =
    process.env.RELIABLE_CONSUMERS_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "reliable-consumers");
  return base;
}

function pomVersion(pom: string): string {
  return pom.match(/<kafka\.version>([^<]+)<\/kafka\.version>/)?.[1] ?? "unknown";
}

/** Runs Maven to write the broker's runtime classpath; throws with Maven's output on failure. */
async function runMaven(outputFile: string): Promise<void> {
  requireCommand("mvn", KAFKA_INSTALL_HINT);
  const args = [
    "-q",
    "-B",
    "-f",
    POM,
    "dependency:build-classpath",
    `-Dmdep.outputFile=${outputFile}`,
    "-Dmdep.includeScope=runtime",
  ];
  const output: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn("mvn", args, { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d: Buffer) => output.push(d.toString()));
    child.stderr.on("data", (d: Buffer) => output.push(d.toString()));
    child.once("error", reject);
    child.once("exit", resolve);
  });
  if (code !== 0) {
    throw new Error(
      `mvn could not resolve Kafka from ${POM} (exit ${code}):\n${output.join("").slice(-4000)}`,
    );
  }
}

function compileHelpers(classesDir: string, jars: readonly string[]): void {
  if (JAVA_SOURCES.every((src) => existsSync(join(classesDir, `${basename(src, ".java")}.class`)))) return;
  requireCommand("javac", "apt-get install -y openjdk-17-jdk-headless (javac compiles the Kafka launcher)");
  // Compiled aside and renamed into place, so a concurrent run never loads a half-written class.
  const tmp = `${classesDir}.${process.pid}.tmp`;
  mkdirSync(tmp, { recursive: true });
  const result = spawnSync("javac", ["--release", "17", "-cp", jars.join(":"), "-d", tmp, ...JAVA_SOURCES], {
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`javac failed for ${JAVA_SOURCES.join(" ")}:\n${result.stderr}`);
  try {
    renameSync(tmp, classesDir);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another run got there first
  }
}

const inFlight = new Map<string, Promise<KafkaDistribution>>();

/**
 * Resolves Kafka (Maven on the first run, a file read afterwards) and compiles the launcher.
 * Concurrent callers in one process share one resolution; two processes may both run Maven, which
 * is safe (each writes its own temp file and renames it into place).
 */
export function kafkaDistribution(): Promise<KafkaDistribution> {
  const pom = readFileSync(POM, "utf8");
  // The classpath depends on the pom only; the helpers' classes and the log config on their sources.
  const key = createHash("sha256").update(pom).digest("hex").slice(0, 16);
  let pending = inFlight.get(key);
  if (!pending) {
    pending = resolveDistribution(key, pomVersion(pom));
    inFlight.set(key, pending);
    pending.catch(() => inFlight.delete(key));
  }
  return pending;
}

async function resolveDistribution(key: string, version: string): Promise<KafkaDistribution> {
  const dir = join(cacheRoot(), `kafka-${version}-${key}`);
  const classpathFile = join(dir, "classpath.txt");
  const sources = createHash("sha256").update(LOG4J2);
  for (const src of JAVA_SOURCES) sources.update("\0").update(readFileSync(src, "utf8"));
  const sourcesKey = sources.digest("hex").slice(0, 12);
  const log4jConfig = join(dir, `log4j2-${sourcesKey}.properties`);
  mkdirSync(dir, { recursive: true });
  let resolved = false;
  const jars = () => readFileSync(classpathFile, "utf8").trim().split(":").filter(Boolean);
  // ~/.m2 may have been cleaned since: re-resolve when any jar is gone.
  if (!existsSync(classpathFile) || !jars().every((jar) => existsSync(jar))) {
    const tmp = `${classpathFile}.${process.pid}.tmp`;
    await runMaven(tmp);
    renameSync(tmp, classpathFile);
    resolved = true;
  }
  if (!jars().some((jar) => /kafka_2\.13-[^/]+\.jar$/.test(jar))) {
    throw new Error(`${classpathFile} does not list kafka_2.13; delete ${dir} and retry`);
  }
  if (!existsSync(log4jConfig)) writeFileSync(log4jConfig, LOG4J2);
  const classesDir = join(dir, `classes-${sourcesKey}`);
  compileHelpers(classesDir, jars());
  return { classpath: `${classesDir}:${jars().join(":")}`, log4jConfig, version, resolved };
}
