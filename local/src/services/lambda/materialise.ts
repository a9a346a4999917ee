import { createHash } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CfnResource } from "../../runtime/cloudAssembly.ts";
import { resolveString } from "../../runtime/intrinsics.ts";
import { type MaterialiseState, num, type ResourceMaterialiser } from "../../runtime/materialiseState.ts";

const MSK_BROKERS =
  /^[a-z0-9.-]+\.kafka(-serverless)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?:\d+(\s*,\s*[a-z0-9.-]+\.kafka(-serverless)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?:\d+)*$/i;

/** `path/to/index.handler` → file + export, looking for .mjs, .js, .cjs as Lambda's Node runtime does. */
export function handlerModule(codeDir: string, handler: string): { codeFile: string; exportName: string } {
  const dot = handler.lastIndexOf(".");
  if (dot <= 0) throw new Error(`handler "${handler}" is not <module>.<export>`);
  const base = join(codeDir, handler.slice(0, dot));
  for (const ext of [".mjs", ".js", ".cjs"]) {
    if (existsSync(base + ext)) return { codeFile: base + ext, exportName: handler.slice(dot + 1) };
  }
  throw new Error(`no ${handler.slice(0, dot)}.{mjs,js,cjs} in ${codeDir}`);
}

/** Where the function's code is: its asset in the cloud assembly, or its inline `ZipFile` written out. */
function codeDirectory(id: string, r: CfnResource, s: MaterialiseState): string {
  const code = r.Properties?.Code as Record<string, unknown> | undefined;
  const assetPath = r.Metadata?.["aws:asset:path"];
  const s3Key = typeof code?.S3Key === "string" ? /^([0-9a-f]{64})\.zip$/.exec(code.S3Key)?.[1] : undefined;
  if (typeof assetPath === "string" && s.assetRoot) return join(s.assetRoot, assetPath);
  // No asset metadata (synthesized without the CLI's context): the S3 key names the asset hash.
  if (s3Key && s.assetRoot && existsSync(join(s.assetRoot, `asset.${s3Key}`)))
    return join(s.assetRoot, `asset.${s3Key}`);
  if (typeof code?.ZipFile === "string") {
    const source = resolveString(code.ZipFile, s.ctx, `${id}.Code.ZipFile`);
    const dir = join(
      tmpdir(),
      "local-runtime-inline",
      createHash("sha256").update(source).digest("hex").slice(0, 16),
    );
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "index.js"), source);
    return dir;
  }
  throw new Error("code is not a local asset (no aws:asset:path metadata) nor inline ZipFile");
}

/**
 * The function's variables resolved to local names; MSK bootstrap brokers point at the local
 * cluster, and a function that uses Kafka gets the TLS/IAM switches rewritten (the cluster has neither).
 */
function environment(id: string, name: string, r: CfnResource, s: MaterialiseState): Record<string, string> {
  const env: Record<string, string> = {};
  const vars = ((r.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
    ?.Variables ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(vars))
    env[k] = resolveString(v, s.ctx, `${id}.Environment.Variables.${k}`);
  let usesKafka = false;
  for (const [k, v] of Object.entries(env)) {
    if (MSK_BROKERS.test(v)) {
      env[k] = s.functionBrokers.join(",");
      usesKafka = true;
      s.note(`${name}: ${k} (MSK bootstrap brokers) → the local Kafka cluster`);
    }
  }
  if (usesKafka) {
    // Set whether or not the template sets them: TLS defaults on with MSK IAM auth.
    for (const [k, v] of Object.entries(s.kafkaRewrites)) {
      if (env[k] === v) continue;
      s.note(`${name}: ${k}=${env[k] ?? "(unset)"} → ${v} (the local Kafka has no TLS)`);
      env[k] = v;
    }
  }
  return env;
}

/** Function properties with no local effect, and what the function host does instead. */
const FUNCTION_PROPERTIES_INSTEAD: Readonly<Record<string, string>> = {
  Architectures: "the code runs on this machine's architecture",
  TracingConfig: "X-Ray tracing is not emulated",
  DeadLetterConfig: "asynchronous invocations are not emulated, so neither is their dead-letter queue",
  EphemeralStorage: "/tmp is this machine's",
  FileSystemConfigs: "EFS is not mounted locally",
  SnapStart: "SnapStart is not emulated (every environment starts cold)",
  LoggingConfig: "logs go to the local log directory, one file per function",
  KmsKeyArn: "environment variables are not encrypted locally",
  CodeSigningConfigArn: "code signing is not checked locally",
  RuntimeManagementConfig: "the local Node.js runs the code",
  RecursiveLoop: "recursive loop detection is not emulated",
};

const GENERAL = new Set(["Architectures", "LoggingConfig"]);

/** `AWS::Lambda::Function` (Node.js) → a local function definition for the function host. */
export const materialiseFunction: ResourceMaterialiser = (id, r, s) => {
  const p = r.Properties ?? {};
  const name = s.physicalName(p.FunctionName, id, 64, `${id}.FunctionName`);
  const runtime = String(p.Runtime ?? "");
  if (!runtime.startsWith("nodejs"))
    throw new Error(`runtime ${runtime || "(image)"} cannot run locally (Node.js only)`);
  const handler = String(p.Handler ?? "index.handler");
  const { codeFile, exportName } = handlerModule(codeDirectory(id, r, s), handler);
  const env = environment(id, name, r, s);
  if (p.VpcConfig) s.note("VPC configuration is accepted and not emulated");
  for (const [key, instead] of Object.entries(FUNCTION_PROPERTIES_INSTEAD))
    if (p[key] !== undefined)
      // Set on (nearly) every function: one note for all of them.
      s.note(`${GENERAL.has(key) ? "functions" : name}: ${key} is not emulated; ${instead}`);
  if (p.Layers)
    s.report.unsupported.push({
      logicalId: id,
      type: r.Type,
      detail: "Lambda layers are not mounted locally",
    });
  const arn = `arn:aws:lambda:${s.region}:${s.accountId}:function:${name}`;
  const reserved = p.ReservedConcurrentExecutions;
  const cdkPath = r.Metadata?.["aws:cdk:path"];
  s.functions.push({
    logicalId: id,
    name,
    arn,
    ...(typeof cdkPath === "string" ? { cdkPath } : {}),
    codeFile,
    exportName,
    handler,
    runtime,
    timeoutSeconds: num(p.Timeout, 3),
    memoryMb: num(p.MemorySize, 128),
    environment: env,
    ...(reserved !== undefined ? { reservedConcurrency: Number(reserved) } : {}),
  });
  s.report.created.push({
    logicalId: id,
    type: r.Type,
    detail: `${name} (${runtime}, ${handler}, timeout ${num(p.Timeout, 3)} s)`,
  });
  return { ref: name, attrs: { Arn: arn } };
};
