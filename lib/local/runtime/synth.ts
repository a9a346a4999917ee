import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface SynthOptions {
  /** The project root (holds cdk.json). */
  readonly projectDir: string;
  readonly outdir: string;
  /** The command that runs the app. @default cdk.json's `app` (another entry: a variant of it) */
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
  const cdkJson = JSON.parse(readFileSync(join(options.projectDir, "cdk.json"), "utf8")) as {
    app: string;
    context?: Record<string, unknown>;
  };
  // What the CLI adds: asset and path metadata (the local runtime finds bundled code through them).
  const context = {
    "aws:cdk:enable-asset-metadata": true,
    "aws:cdk:enable-path-metadata": true,
    ...cdkJson.context,
    ...options.context,
  };
  const bin = join(options.projectDir, "node_modules", ".bin");
  let output = "";
  const child = spawn(options.app ?? cdkJson.app, {
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
    throw new Error(`cdk synth failed (exit ${code}):\n${output.slice(-4000)}`);
  }
  return options.outdir;
}
