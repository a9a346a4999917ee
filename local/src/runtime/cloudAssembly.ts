import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";

/** The parts of a CloudFormation template the local runtime reads. */
export interface CfnTemplate {
  readonly Resources: Record<string, CfnResource>;
  readonly Parameters?: Record<string, { Type: string; Default?: unknown }>;
  readonly Conditions?: Record<string, unknown>;
  readonly Mappings?: Record<string, Record<string, Record<string, unknown>>>;
  readonly Outputs?: Record<string, { Value: unknown; Description?: string }>;
}

export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DependsOn?: string | string[];
  readonly Condition?: string;
  readonly Metadata?: Record<string, unknown>;
}

/** One stack of a cloud assembly: its name and template. */
export interface StackArtifact {
  /** The CloudFormation stack name. */
  readonly stackName: string;
  readonly template: CfnTemplate;
  /** Where `aws:asset:path` metadata is relative to (the cloud assembly directory). */
  readonly assetRoot: string;
}

interface Manifest {
  artifacts?: Record<
    string,
    { type: string; displayName?: string; properties?: { templateFile?: string; stackName?: string } }
  >;
}

/**
 * Reads the stacks of a synthesized cloud assembly (`cdk.out`): `manifest.json` → every
 * `aws:cloudformation:stack` artifact with its template. Nested assemblies (stages) are followed.
 */
export function loadCloudAssembly(dir: string): StackArtifact[] {
  const manifestPath = join(dir, "manifest.json");
  if (!existsSync(manifestPath)) throw new Error(`${dir} is not a cloud assembly (no manifest.json)`);
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as Manifest;
  const stacks: StackArtifact[] = [];
  for (const [id, artifact] of Object.entries(manifest.artifacts ?? {})) {
    if (artifact.type === "aws:cloudformation:stack" && artifact.properties?.templateFile) {
      const file = artifact.properties.templateFile;
      stacks.push({
        stackName: artifact.properties.stackName ?? id,
        template: JSON.parse(readFileSync(isAbsolute(file) ? file : join(dir, file), "utf8")) as CfnTemplate,
        assetRoot: dir,
      });
    } else if (artifact.type === "cdk:cloud-assembly") {
      const nested = (artifact.properties as { directoryName?: string } | undefined)?.directoryName;
      if (nested) stacks.push(...loadCloudAssembly(join(dir, nested)));
    }
  }
  return stacks;
}
