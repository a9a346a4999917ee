/**
 * `reliable-consumers local`: runs the user's CDK app on the embedded emulators, or on those the
 * user already runs (`--endpoint-url`, the `AWS_ENDPOINT_URL*` variables, `--kafka-brokers`), with
 * Lambda's trigger semantics (SQS, DynamoDB Streams, MSK, schedules), until Ctrl-C. Synthesizes the app
 * like the cdk CLI (`--app "<command>"`, or cdk.json's `app`), or takes a synthesized `--cdk-out`;
 * prints the endpoints, the resources and what is not emulated; streams each function's logs
 * with its name.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import { parseArgs } from "node:util";
import {
  CONSOLE_ARGS,
  CONSOLE_USAGE,
  consoleForRuntime,
  consoleLogTee,
  consolePort,
  createTelemetryHub,
  type LocalConsole,
  type TelemetryHub,
} from "./console/localConsole.ts";
import { kafkaSubstrateFromArgs, startEmulators } from "./emulators.ts";
import { assertPrerequisites } from "./prerequisites.ts";
import { formatReport, type LocalRuntime, startLocalRuntime } from "./runtime/localRuntime.ts";
import { SynthError, synthesize } from "./runtime/synth.ts";
import { untilSignal } from "./signals.ts";
import {
  checkUpstreams,
  describeUpstreams,
  resolveUpstreams,
  UpstreamError,
  upstreamIdentity,
} from "./upstreams.ts";

export const LOCAL_USAGE = `usage: reliable-consumers local [--app "<command>" | --cdk-out <dir>] [options]
  --app <command>     the command that runs your CDK app, as for 'cdk --app' (default: cdk.json's "app")
  --cdk-out <dir>     a synthesized cloud assembly instead of synthesizing
  --stack <name>      the stack to run when the app has several
  --context key=value CDK context for the synth (repeatable)
  --log-dir <dir>     where each function's log file goes (default: a temporary directory)
  --kafka mock|real   librdkafka's mock (default) or an Apache Kafka broker
  --no-enforce-iam    do not check each function's calls against its role's IAM policies
  --quiet             do not stream function logs to the terminal
  --endpoint-url <url>  create the resources on emulators you run already (LocalStack: http://localhost:4566)
                      instead of ours, for every AWS service; AWS_ENDPOINT_URL_SQS, _DYNAMODB, _DYNAMODB_STREAMS
                      and AWS_ENDPOINT_URL do so per service, as for the AWS CLI; the rest stay embedded
  --kafka-brokers <host:port,...>  a Kafka you run instead of our Kafka mock
${CONSOLE_USAGE}`;

const SHUTDOWN_BOUND_MS = 15_000;

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** `key=value` pairs → context, values parsed as JSON where they are JSON (`true`, `3`). */
export function parseContext(pairs: readonly string[]): Record<string, unknown> {
  const context: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new Error(`--context ${pair}: expected key=value`);
    const raw = pair.slice(eq + 1);
    try {
      context[pair.slice(0, eq)] = JSON.parse(raw);
    } catch {
      context[pair.slice(0, eq)] = raw;
    }
  }
  return context;
}

/** Each line of a function's output, prefixed with its name, to `out`. */
function prefixedLines(name: string, out: NodeJS.WritableStream): NodeJS.WritableStream {
  let partial = "";
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) out.write(`[${name}] ${line}\n`);
      done();
    },
  });
}

/** What a user needs to talk to the running app: endpoints, and the resources by name. */
export function describeRuntime(
  runtime: LocalRuntime,
  env: Record<string, string>,
  logDir: string,
): string[] {
  const { app } = runtime;
  const triggers = (fn: string) =>
    app.mappings
      .filter((m) => m.functionName === fn)
      .map((m) =>
        m.kind === "sqs"
          ? m.queue.name
          : m.kind === "dynamodb"
            ? `${m.table.name} stream`
            : m.kind === "kinesis"
              ? `Kinesis ${m.stream.name}`
              : m.topics.join(","),
      )
      .concat(
        app.schedules.filter((s) => s.targets.some((t) => t.functionName === fn)).map((s) => s.expression),
      );
  return [
    "",
    "Endpoints (export these to use the AWS CLI, an SDK or kcat against the app):",
    ...Object.entries(env).map(([k, v]) => `  export ${k}=${v}`),
    "Queues:",
    ...app.queues.map((q) => `  ${q.name}  ${q.url}`),
    "Tables:",
    ...app.tables.map((t) => `  ${t.name}${t.streamArn ? " (stream)" : ""}`),
    ...(app.topics.length ? ["Topics:", ...app.topics.map((t) => `  ${t.name}`)] : []),
    "Functions:",
    ...app.functions.map((f) => `  ${f.name}  ← ${triggers(f.name).join(", ") || "(no trigger)"}`),
    `Function logs: ${logDir}/<function>.log; Ctrl-C stops everything.`,
  ];
}

/** The command line of `reliable-consumers local`. */
function parseLocalArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      app: { type: "string" },
      "cdk-out": { type: "string" },
      stack: { type: "string" },
      context: { type: "string", multiple: true, default: [] },
      "log-dir": { type: "string" },
      kafka: { type: "string", default: "mock" },
      "enforce-iam": { type: "boolean", default: true },
      quiet: { type: "boolean", default: false },
      "endpoint-url": { type: "string" },
      "kafka-brokers": { type: "string" },
      ...CONSOLE_ARGS,
      help: { type: "boolean", short: "h", default: false },
    },
    allowNegative: true,
  }).values;
}

/** The user's own services, checked before the synth; `undefined` (after saying why) when one is not there. */
async function upstreamsOrExit(values: {
  "endpoint-url"?: string | undefined;
  "kafka-brokers"?: string | undefined;
}) {
  try {
    const upstreams = resolveUpstreams({
      ...(values["endpoint-url"] !== undefined ? { endpointUrl: values["endpoint-url"] } : {}),
      ...(values["kafka-brokers"] !== undefined ? { kafkaBrokers: values["kafka-brokers"] } : {}),
    });
    await checkUpstreams(upstreams, upstreamIdentity());
    return upstreams;
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    log(`local: ${error.message}`);
    return undefined;
  }
}

/** The app synthesized as the cdk CLI does; `undefined` after cdk's own error when it fails. */
async function synthesizeOrExit(a: {
  projectDir: string;
  workDir: string;
  app: string | undefined;
  context: Record<string, unknown>;
}): Promise<string | undefined> {
  log(`local: synthesizing ${a.app ?? "the app in cdk.json"}...`);
  try {
    return await synthesize({
      projectDir: a.projectDir,
      outdir: join(a.workDir, "cdk.out"),
      ...(a.app ? { app: a.app } : {}),
      context: a.context,
    });
  } catch (error) {
    if (!(error instanceof SynthError)) throw error;
    // cdk's own error, as the app printed it.
    process.stderr.write(error.output || `${error.message}\n`);
    log("local: the app failed to synthesize (above); nothing was started.");
    rmSync(a.workDir, { recursive: true, force: true });
    return undefined;
  }
}

/** The console over the running app (`--no-console`: none), its URL printed with the endpoints. */
async function consoleOrNone(
  runtime: LocalRuntime,
  emulatorEnv: Record<string, string>,
  hub: TelemetryHub | undefined,
  port: number | undefined,
): Promise<LocalConsole | undefined> {
  if (!hub) return undefined;
  const served = await consoleForRuntime(runtime, emulatorEnv, hub, port);
  log(`Console (open it in a browser; the token in it is asked on every request): ${served.url}`);
  return served;
}

/** Prints what is running, streams until Ctrl-C, then lists the calls that were denied. */
async function runUntilSignal(
  runtime: LocalRuntime,
  emulatorEnv: Record<string, string>,
  logDir: string,
  served: LocalConsole | undefined,
) {
  for (const line of formatReport(runtime.app)) log(line);
  // The tools' endpoints are the gateway's: the queue URLs it hands out resolve, and the quotas hold.
  for (const line of describeRuntime(runtime, { ...emulatorEnv, ...runtime.enforcement.runtimeEnv }, logDir))
    log(line);
  const at = served ? `; console ${served.url}` : "";
  log(
    runtime.enforcement.enforceIam
      ? `local: ready${at}; each function acts as its role (a call its policies do not allow is denied, as on AWS)`
      : `local: ready${at}; IAM is not enforced (--no-enforce-iam)`,
  );
  await untilSignal();
  log("local: stopping...");
  const denied = runtime.denials.summary();
  if (denied.length) {
    log(`local: ${runtime.denials.all().length} calls were denied; each would fail on AWS too:`);
    for (const line of denied) log(`  ${line}`);
  } else if (runtime.enforcement.enforceIam) log("local: no call was denied");
}

/** `reliable-consumers local`: see the file's comment and LOCAL_USAGE. */
export async function localCommand(argv: string[]): Promise<number> {
  const values = parseLocalArgs(argv);
  if (values.help) {
    log(LOCAL_USAGE);
    return 0;
  }
  const projectDir = process.cwd();
  // cdk --app also takes a cloud assembly directory.
  const appIsAssembly = values.app !== undefined && existsSync(join(resolve(values.app), "manifest.json"));
  const given = values["cdk-out"] ?? (appIsAssembly ? values.app : undefined);
  if (!given && !values.app && !existsSync(join(projectDir, "cdk.json"))) {
    log(`local: no app here (${projectDir} has no cdk.json). Give --app "<command>" or --cdk-out <dir>.`);
    log(LOCAL_USAGE);
    return 2;
  }
  const context = parseContext(values.context);
  const port = consolePort(values);
  const kafka = kafkaSubstrateFromArgs(["--kafka", values.kafka]);
  const upstreams = await upstreamsOrExit(values);
  if (upstreams === undefined) return 3;
  assertPrerequisites({
    dynamodb: !upstreams.dynamodb,
    sqs: !upstreams.sqs,
    kafka: !upstreams.kafkaBrokers,
    iam: values["enforce-iam"],
  });
  const workDir = mkdtempSync(join(tmpdir(), "reliable-consumers-local-"));
  const logDir = resolve(values["log-dir"] ?? join(workDir, "logs"));
  mkdirSync(logDir, { recursive: true });

  const cdkOut = given
    ? resolve(given)
    : await synthesizeOrExit({ projectDir, workDir, app: values.app, context });
  if (cdkOut === undefined) return 1;

  log(`local: ${describeUpstreams(upstreams).join("; ")}; starting the embedded ones...`);
  const emulators = await startEmulators({ upstreams, kafka });
  let runtime: LocalRuntime | undefined;
  let served: LocalConsole | undefined;
  // Before the runtime, so the console reads every function's log from its first line.
  const hub = values.console ? createTelemetryHub() : undefined;
  const terminal = values.quiet
    ? undefined
    : (fn: { name: string }) => prefixedLines(fn.name, process.stdout);
  const logTee = hub ? consoleLogTee(hub, terminal) : terminal;
  try {
    runtime = await startLocalRuntime({
      cdkOut,
      ...(values.stack ? { stackName: values.stack } : {}),
      logDir,
      ...(logTee ? { logTee } : {}),
      enforceIam: values["enforce-iam"],
    });
    served = await consoleOrNone(runtime, emulators.env, hub, port);
    await runUntilSignal(runtime, emulators.env, logDir, served);
    return 0;
  } finally {
    const stopped = (async () => {
      await served?.stop();
      await runtime?.stop();
      await emulators.stop();
    })();
    // A hung invocation must not keep Ctrl-C from ending the run (the emulators die with this process).
    await Promise.race([stopped, new Promise((r) => setTimeout(r, SHUTDOWN_BOUND_MS).unref())]);
    // The synthesized assembly, and the logs unless --log-dir asked to keep them (they were streamed).
    rmSync(values["log-dir"] ? join(workDir, "cdk.out") : workDir, { recursive: true, force: true });
  }
}
