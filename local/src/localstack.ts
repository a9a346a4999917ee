import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { drain, MissingPrerequisiteError, spawnGuarded, stopChild, waitForLine } from "./childProcess.ts";
import { ownedTempDir } from "./ownedTempDir.ts";

/**
 * LocalStack's own runtime (the PyPI package `localstack-core`), without Docker, as one more
 * emulator: 127.0.0.1 only, a free port, its own temp dir, gone with this process even after a
 * SIGKILL. What runs without Docker: SQS (the tests' second SQS substrate), S3, STS, IAM, Kinesis.
 * Not DynamoDB (it downloads a JDK and DynamoDB Local at first use), not Lambda (Docker), not MSK
 * (a paid licence).
 */
export interface LocalStack {
  /** `http://127.0.0.1:<port>`: every service on one gateway. */
  readonly endpoint: string;
  /** The process id of LocalStack's Python process (-1 if the OS gave none). */
  readonly pid: number;
  /** LocalStack's FILESYSTEM_ROOT, deleted by `stop()`. */
  readonly dataDir: string;
  /** As LocalStack prints it, e.g. `2026.3.0`. */
  readonly version: string;
  /** From spawn to "Ready.", in ms. */
  readonly startMs: number;
  /** Stops LocalStack and deletes its `dataDir`: every queue and message on it goes. */
  stop(): Promise<void>;
}

/** How `startLocalStack` runs LocalStack's runtime (services, start timeout). */
export interface LocalStackOptions {
  /** LocalStack's SERVICES. @default ["sqs"] */
  readonly services?: readonly string[];
  /**
   * The Python of a venv with `localstack-core[runtime]` (see requirements-localstack.txt).
   * @default $LOCALSTACK_PYTHON, else `.venv-localstack/bin/python` in the current directory, this
   * package's directory, or one of their parents
   */
  readonly python?: string;
  /** More LocalStack configuration (e.g. `SQS_DELAY_RECENTLY_DELETED: "1"`); ours wins on conflict. */
  readonly config?: Readonly<Record<string, string>>;
  /** How long to wait for LocalStack's "Ready.", in ms, before failing. @default 60000 */
  readonly startTimeoutMs?: number;
}

const VENV_PYTHON = join(".venv-localstack", "bin", "python");
const INSTALL_HINT = [
  "LocalStack's runtime was not found. In this repository: bash scripts/setup.sh. Elsewhere, on Python >= 3.13:",
  "  python3.13 -m venv .venv-localstack && .venv-localstack/bin/pip install \\",
  `    "localstack-core[runtime]==2026.3.0" "cbor2<6" "pyopenssl<26" "cryptography<47" service-identity`,
  "or set LOCALSTACK_PYTHON to the python of a venv that has it.",
].join("\n");

/**
 * The stock entry point ignores stdin, so a parent killed with SIGKILL would leave it running. This
 * one runs it in-process beside a thread that holds our stdin pipe and ends the process when the
 * pipe closes (as GuardedKafka.java does for the brokers). With SQS and the other Docker-free
 * services, LocalStack starts no child processes of its own.
 */
const GUARDED_MAIN = [
  "import os, runpy, sys, threading",
  "def watch():",
  "    try:",
  "        while sys.stdin.buffer.read(65536): pass",
  "    finally:",
  "        os._exit(0)",
  "threading.Thread(target=watch, name='parent-watchdog', daemon=True).start()",
  "sys.argv = ['localstack']",
  "runpy.run_module('localstack.runtime.main', run_name='__main__', alter_sys=True)",
].join("\n");

function findPython(given: string | undefined): string {
  const explicit = given ?? process.env.LOCALSTACK_PYTHON;
  if (explicit) {
    if (!existsSync(explicit))
      throw new MissingPrerequisiteError(`${explicit} does not exist.\n${INSTALL_HINT}`);
    return explicit;
  }
  const here = dirname(fileURLToPath(import.meta.url));
  for (const start of [process.cwd(), here]) {
    for (let dir = resolve(start); ; dir = dirname(dir)) {
      const candidate = join(dir, VENV_PYTHON);
      if (existsSync(candidate)) return candidate;
      if (dirname(dir) === dir) break;
    }
  }
  throw new MissingPrerequisiteError(INSTALL_HINT);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as import("node:net").AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The configuration that makes the runtime work here and stay local (each checked on 2026.3.0):
 * - OVERRIDE_IN_DOCKER=0: it would believe it runs in its container wherever /.dockerenv exists;
 * - GATEWAY_SERVER=hypercorn: the default (twisted) listens on 0.0.0.0 whatever GATEWAY_LISTEN says;
 * - SQS_ENDPOINT_STRATEGY=path and LOCALSTACK_HOST: queue URLs `http://127.0.0.1:<port>/queue/<region>/
 *   <account>/<name>`, which the AWS SDK for JavaScript v3 takes (it rejects the default host names);
 * - DNS_ADDRESS=0: no DNS server of its own; DISABLE_EVENTS and SKIP_SSL_CERT_DOWNLOAD: no calls out
 *   (analytics, the TLS certificate), none of which this machine's network would answer.
 */
function localStackEnv(
  port: number,
  dataDir: string,
  options: LocalStackOptions,
): Record<string, string | undefined> {
  const kinesis = (options.services ?? []).includes("kinesis");
  return {
    ...(kinesis ? kinesisOnLocalStack(dataDir) : {}),
    // Not the caller's AWS_* variables: LocalStack's own internal clients are botocore clients, and an
    // AWS_ENDPOINT_URL_SQS pointing elsewhere (the tests export fauxqs's) would send them there.
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LANG: process.env.LANG ?? "C.UTF-8",
    TMPDIR: process.env.TMPDIR,
    ...options.config,
    OVERRIDE_IN_DOCKER: "0",
    GATEWAY_SERVER: "hypercorn",
    GATEWAY_LISTEN: `127.0.0.1:${port}`,
    LOCALSTACK_HOST: `127.0.0.1:${port}`,
    SQS_ENDPOINT_STRATEGY: "path",
    DNS_ADDRESS: "0",
    SERVICES: (options.services ?? ["sqs"]).join(","),
    FILESYSTEM_ROOT: dataDir,
    DISABLE_EVENTS: "1",
    SKIP_SSL_CERT_DOWNLOAD: "1",
    SQS_DISABLE_CLOUDWATCH_METRICS: "1",
    PYTHONUNBUFFERED: "1",
  };
}

/**
 * LocalStack's Kinesis runs kinesis-mock's Node build, which it installs at first use with
 * `npm install kinesis-local@<KINESIS_MOCK_VERSION>` into `<FILESYSTEM_ROOT>/var/lib/localstack/lib/
 * kinesis-local/<version>` (localstack/services/kinesis/packages.py), unless
 * `node_modules/kinesis-local/main.js` is there already. So the package this one depends on is
 * linked there, and its version named: no download. kinesis-mock binds 0.0.0.0; LocalStack passes
 * its own environment on to it, so NODE_OPTIONS preloads our loopback.cjs, keeping LocalStack's port
 * (KINESIS_LOCAL_KEEP_PORT) and binding 127.0.0.1. KINESIS_LATENCY=0 makes its state changes
 * instantaneous, as ours are.
 */
function kinesisOnLocalStack(dataDir: string): Record<string, string> {
  const require = createRequire(import.meta.url);
  const pkg = dirname(require.resolve("kinesis-local/package.json"));
  const version = (JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { version: string })
    .version;
  const target = join(dataDir, "var", "lib", "localstack", "lib", "kinesis-local", version, "node_modules");
  mkdirSync(target, { recursive: true });
  if (!existsSync(join(target, "kinesis-local"))) symlinkSync(pkg, join(target, "kinesis-local"));
  const preload = fileURLToPath(new URL("./services/kinesis/loopback.cjs", import.meta.url));
  return {
    KINESIS_MOCK_VERSION: version,
    KINESIS_MOCK_PROVIDER_ENGINE: "node",
    KINESIS_LATENCY: "0",
    KINESIS_LOCAL_KEEP_PORT: "1",
    NODE_OPTIONS: `--require ${preload}`,
  };
}

async function startOnce(python: string, options: LocalStackOptions): Promise<LocalStack> {
  const t0 = performance.now();
  const dataDir = ownedTempDir("rc-localstack-");
  const port = await freePort();
  const child = spawnGuarded(python, ["-c", GUARDED_MAIN], {
    cwd: dataDir,
    env: localStackEnv(port, dataDir, options),
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-8192);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  try {
    await waitForLine(child, /^Ready\.$/m, options.startTimeoutMs ?? 60_000, "LocalStack");
  } catch (error) {
    await stopChild(child);
    rmSync(dataDir, { recursive: true, force: true });
    const message = String((error as Error).message);
    if (/No module named '?localstack/.test(message))
      throw new MissingPrerequisiteError(`${python} has no localstack-core.\n${INSTALL_HINT}`);
    throw error;
  }
  child.stdout?.off("data", collect);
  child.stderr?.off("data", collect);
  drain(child);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    pid: child.pid ?? -1,
    dataDir,
    version: /LocalStack version: (\S+)/.exec(output)?.[1] ?? "unknown",
    startMs: Math.round(performance.now() - t0),
    stop: async () => {
      await stopChild(child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts LocalStack's runtime on 127.0.0.1 and a free port; resolves once it prints "Ready.". The
 * port is picked before LocalStack binds it, so another process can take it meanwhile: then it
 * starts again on a fresh one (up to 3 times).
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const python = findPython(options.python);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(python, options);
    } catch (error) {
      if (attempt >= 3 || !/address already in use|Errno 98/i.test(String(error))) throw error;
    }
  }
}
