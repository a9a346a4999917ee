import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CfnGuardValidator } from "@cdklabs/cdk-validator-cfnguard";
import { App, type Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { ConsumerRuleError } from "reliable-consumers/cdk";
import { buildApp } from "../../infra/app.ts";

/** An app that skips esbuild bundling (the bundle test builds the real bundles once). */
export function testApp(context: Record<string, unknown> = {}): App {
  return new App({ context: { "aws:cdk:bundling-stacks": [], ...context } });
}

/** Synthesizes the reference app once; returns its template and the unacknowledged cdk-nag findings. */
export function synthReference(context: Record<string, unknown> = {}) {
  const { app, stack } = buildApp(testApp(context));
  const assembly = app.synth(); // throws if cdk-nag or a construct validation fails
  const nag = new AwsSolutionsChecks().validateScope(stack);
  return { app, stack, assembly, template: Template.fromStack(stack), nag };
}

export const findingsOf = (nag: ReturnType<AwsSolutionsChecks["validateScope"]>) =>
  nag.violations.map(
    (v) => `${v.severity} ${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
  );

/** Every `Validations.acknowledge` in the tree, with its reason. */
export function acknowledgements(root: Stack | App): Array<{ path: string; id: string; reason: string }> {
  const out: Array<{ path: string; id: string; reason: string }> = [];
  for (const c of root.node.findAll()) {
    for (const m of c.node.metadata) {
      if (m.type !== "aws:cdk:acknowledged-rules") continue;
      for (const [id, value] of Object.entries(m.data as Record<string, unknown>)) {
        const reason =
          typeof value === "string" ? value : String((value as { reason?: unknown })?.reason ?? "");
        out.push({ path: c.node.path, id, reason });
      }
    }
  }
  return out;
}

/**
 * The stable code of the `ConsumerRuleError` that `fn` throws, or the codes in a synth error that
 * collected construct validations (each message starts with `[code]`); `undefined` if none.
 */
export function ruleCodeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConsumerRuleError) return error.code;
    const codes = [...String((error as Error).message).matchAll(/\[([A-Za-z]+)\] /g)].map((m) => m[1]);
    return codes.length > 0 ? [...new Set(codes)].join(",") : `not a rule error: ${(error as Error).message}`;
  }
  return undefined;
}

interface ReportViolation {
  readonly ruleName: string;
  readonly reason?: string;
  readonly violatingConstructs: ReadonlyArray<{ readonly constructPath: string }>;
}

/** What synth's validation report says for one plugin: unsuppressed and acknowledged findings. */
export function validationReport(assemblyDirectory: string, pluginName: string) {
  const report = JSON.parse(readFileSync(join(assemblyDirectory, "validation-report.json"), "utf8")) as {
    pluginReports: Array<{
      pluginName: string;
      conclusion: string;
      violations: ReportViolation[];
      suppressedViolations?: ReportViolation[];
    }>;
  };
  const plugin = report.pluginReports.find((r) => r.pluginName === pluginName);
  if (!plugin) throw new Error(`no report of ${pluginName}: is the plugin registered in infra/app.ts?`);
  return plugin;
}

/**
 * cfn-guard with the Control Tower rules on a synthesized template, run directly (the plugin with
 * no aws-cdk-lib suppression applied): every finding, as rule name and logical id.
 */
export function rawGuardFindings(templatePath: string): Array<{ rule: string; logicalId: string }> {
  const report = new CfnGuardValidator().validate({
    templatePaths: [templatePath],
    appConstruct: new App(),
  });
  return report.violations.flatMap((v) =>
    v.violatingResources.map((r) => ({ rule: v.ruleName, logicalId: r.resourceLogicalId })),
  );
}
