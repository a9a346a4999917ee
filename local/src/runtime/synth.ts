import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Options of `synthesize`. */
export interface SynthOptions {
  /** The app's directory (where cdk.json is, if any): the command runs there. */
  readonly projectDir: string;
  /** Where the cloud assembly goes (`CDK_OUTDIR`); `synthesize` resolves with it. */
  readonly outdir: string;
  /** The command that runs the app, like `cdk --app`. @default cdk.json's `app` */
  readonly app?: string;
  /** Extra context values, over cdk.json's. */
  readonly context?: Record<string, unknown>;
  /** Where the app's output goes. @default ignored unless it fails */
  readonly onOutput?: (chunk: string) => void;
}

/**
 * Synthesizes the CDK app the way the CDK CLI does: runs cdk.json's `app` command with
 * `CDK_OUTDIR` and `CDK_CONTEXT_JSON` (cdk.json's context plus overrides). No AWS access.
 */
export async function synthesize(options: SynthOptions): Promise<string> {
  const cdkJsonPath = join(options.projectDir, "cdk.json");
  const cdkJson = existsSync(cdkJsonPath)
    ? (JSON.parse(readFileSync(cdkJsonPath, "utf8")) as { app?: string; context?: Record<string, unknown> })
    : {};
  const app = options.app ?? cdkJson.app;
  if (!app)
    throw new SynthError(`no app to synthesize: give --app "<command>" or an "app" in ${cdkJsonPath}`, "");
  // What the CLI adds: asset and path metadata (the local runtime finds bundled code through them).
  const context = {
    "aws:cdk:enable-asset-metadata": true,
    "aws:cdk:enable-path-metadata": true,
    ...cdkJson.context,
    ...options.context,
  };
  const bin = join(options.projectDir, "node_modules", ".bin");
  let output = "";
  const child = spawn(app, {
    cwd: options.projectDir,
    shell: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      CDK_OUTDIR: options.outdir,
      CDK_CONTEXT_JSON: JSON.stringify(context),
      CDK_CLI_VERSION: "local-runtime",
    },
  });
  const collect = (d: Buffer) => {
    const text = d.toString();
    output += text;
    options.onOutput?.(text);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", resolve);
  });
  if (code !== 0 || !existsSync(join(options.outdir, "manifest.json"))) {
    throw new SynthError(`cdk synth failed (exit ${code}):\n${output.slice(-4000)}`, output);
  }
  return options.outdir;
}

/** The app did not synthesize; `output` is everything it printed (cdk's own error among it). */
export class SynthError extends Error {
  override readonly name = "SynthError";
  readonly output: string;
  constructor(message: string, output: string) {
    super(message);
    this.output = output;
  }
}
