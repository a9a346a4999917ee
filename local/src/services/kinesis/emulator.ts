import { Agent } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { drain, MissingPrerequisiteError, spawnGuarded, stopChild, waitForLine } from "../../childProcess.ts";
import { closeGateway, forwardRequest, listenGateway, readBody } from "../../enforcement/gatewayHttp.ts";

/** A running kinesis-local (kinesis-mock on Node) on 127.0.0.1. */
export interface KinesisLocal {
  /**
   * `http://127.0.0.1:<port>`: a bridge that takes HTTP/1.1 and cleartext HTTP/2 (the SDK's
   * Kinesis client speaks only HTTP/2) and forwards over HTTP/1.1 to kinesis-mock's plain listener,
   * which speaks only HTTP/1.1.
   */
  readonly endpoint: string;
  readonly pid: number;
  /** Milliseconds from spawn to the plain listener being bound. */
  readonly startMs: number;
  stop(): Promise<void>;
}

/** Options of `startKinesisLocal`. */
export interface KinesisLocalOptions {
  /** @default 20000 */
  readonly startTimeoutMs?: number;
  /** The account streams are created in when a request names none. @default "000000000000" */
  readonly accountId?: string;
  /** @default "us-east-1" */
  readonly region?: string;
}

/** Placeholders: the loopback preload rebinds both listeners to ports the OS picks and names them by these. */
const PLAIN_PLACEHOLDER = 4568;
const TLS_PLACEHOLDER = 4567;

/**
 * kinesis-mock's state changes (CreateStream → ACTIVE, split, merge, consumer registration) take
 * 500 ms each by default, to imitate AWS's asynchrony; locally they are instantaneous, so a test or
 * a materialisation never waits on a timer (the stream still passes through CREATING).
 */
const INSTANT = [
  "CREATE_STREAM_DURATION",
  "DELETE_STREAM_DURATION",
  "REGISTER_STREAM_CONSUMER_DURATION",
  "DEREGISTER_STREAM_CONSUMER_DURATION",
  "START_STREAM_ENCRYPTION_DURATION",
  "STOP_STREAM_ENCRYPTION_DURATION",
  "MERGE_SHARDS_DURATION",
  "SPLIT_SHARD_DURATION",
  "UPDATE_SHARD_COUNT_DURATION",
  "UPDATE_STREAM_MODE_DURATION",
];

/** The directory of the `kinesis-local` package: its `main.js`, and the `server.json` it reads from cwd. */
function packageDir(): string {
  const require = createRequire(import.meta.url);
  try {
    return dirname(require.resolve("kinesis-local/package.json"));
  } catch {
    throw new MissingPrerequisiteError(
      "the Kinesis emulator needs the package 'kinesis-local'. Install it: npm install --save-dev --save-exact kinesis-local@0.6.2",
    );
  }
}

/**
 * Starts kinesis-local in a child Node process, in its own directory (it reads its TLS
 * certificate, `server.json`, from cwd), on 127.0.0.1 only: kinesis-mock hard-codes the wildcard
 * address, so `loopback.cjs` is preloaded to bind its listeners to the loopback interface. Ready when
 * the plain listener is bound (it serves from then on). Streams live in memory.
 */
export async function startKinesisLocal(options: KinesisLocalOptions = {}): Promise<KinesisLocal> {
  const dir = packageDir();
  const preload = join(dirname(fileURLToPath(import.meta.url)), "loopback.cjs");
  const started = performance.now();
  const child = spawnGuarded(process.execPath, ["--require", preload, join(dir, "main.js")], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "",
      KINESIS_MOCK_PLAIN_PORT: String(PLAIN_PLACEHOLDER),
      KINESIS_MOCK_TLS_PORT: String(TLS_PLACEHOLDER),
      AWS_ACCOUNT_ID: options.accountId ?? "000000000000",
      AWS_REGION: options.region ?? "us-east-1",
      SHOULD_PERSIST_DATA: "false",
      LOAD_DATA_IF_EXISTS: "false",
      LOG_LEVEL: "WARN",
      ...Object.fromEntries(INSTANT.map((name) => [name, "0ms"])),
    },
  });
  const match = await waitForLine(
    child,
    new RegExp(`KINESIS_LOCAL_LISTENING ${PLAIN_PLACEHOLDER} (127\\.0\\.0\\.1:\\d+)`),
    options.startTimeoutMs ?? 20_000,
    "kinesis-local",
  );
  const startMs = Math.round(performance.now() - started);
  drain(child);
  const upstream = `http://${match[1]}`;
  const agent = new Agent({ keepAlive: true });
  const bridge = await listenGateway(async (req, res) =>
    forwardRequest(req, res, await readBody(req), upstream, agent, undefined),
  );
  return {
    endpoint: bridge.origin,
    pid: child.pid ?? -1,
    startMs,
    stop: async () => {
      await closeGateway([bridge]);
      agent.destroy();
      await stopChild(child);
    },
  };
}
