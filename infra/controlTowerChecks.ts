import { CfnGuardValidator, type CfnGuardValidatorProps } from "@cdklabs/cdk-validator-cfnguard";
import type {
  IPolicyValidationContext,
  IPolicyValidationPlugin,
  PolicyValidationPluginReport,
} from "aws-cdk-lib";
import { GUARD_PLUGIN } from "../lib/cdk/guardAcknowledgements.ts";

/**
 * AWS Control Tower's proactive controls at synth: `CfnGuardValidator` (cfn-guard and the rules ship
 * in `@cdklabs/cdk-validator-cfnguard`), with every finding marked `severity: "error"`.
 *
 * Why the wrapper: the validator reports findings without a severity. Once any finding is
 * acknowledged, aws-cdk-lib recomputes a report's success from the severities of what is left, so
 * the remaining, unacknowledged findings (no severity) would no longer fail synth. Seen with
 * aws-cdk-lib 2.276.0 and the validator 0.0.62.
 */
export class ControlTowerChecks implements IPolicyValidationPlugin {
  readonly name = GUARD_PLUGIN;
  readonly version: string;
  readonly ruleIds: string[];
  private readonly guard: CfnGuardValidator;

  constructor(props: CfnGuardValidatorProps = {}) {
    this.guard = new CfnGuardValidator(props);
    this.version = this.guard.version ?? "0.0.0";
    this.ruleIds = this.guard.ruleIds ?? [];
  }

  validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const report = this.guard.validate(context);
    return {
      ...report,
      violations: report.violations.map((v) => ({ ...v, severity: v.severity ?? "error" })),
    };
  }
}
