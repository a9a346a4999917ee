import { CfnResource, Validations } from "aws-cdk-lib";
import type { IConstruct } from "constructs";

/**
 * The name under which `@cdklabs/cdk-validator-cfnguard` reports (AWS Control Tower's proactive
 * controls run by cfn-guard at synth); aws-cdk-lib matches acknowledgements `<plugin>::<rule>`.
 */
export const GUARD_PLUGIN = "cdk-validator-cfnguard";

/** The Control Tower controls the constructs meet by default or acknowledge, by guard rule name. */
export const CONTROL_TOWER_RULE = {
  /** CT.CLOUDWATCH.PR.1: an alarm has an action. */
  alarmAction: "cloudwatch_alarm_action_check",
  /** CT.CLOUDWATCH.PR.2: a log group is retained ≥ 1 year. */
  logGroupRetention: "cloudwatch_log_group_retention_period_check",
  /** CT.CLOUDWATCH.PR.3: a log group is encrypted with KMS. */
  logGroupEncryption: "cloudwatch_log_group_encrypted_check",
  /** CT.LAMBDA.PR.3: a function runs in a customer-managed VPC. */
  lambdaInVpc: "lambda_inside_vpc_check",
  /** CT.SQS.PR.1: a queue has a DLQ, or is a DLQ (redrive-allow policy). */
  sqsDeadLetterQueue: "sqs_dlq_check",
} as const;
export type ControlTowerRule = (typeof CONTROL_TOWER_RULE)[keyof typeof CONTROL_TOWER_RULE];

/**
 * Acknowledges a cfn-guard finding on `scope` and every CloudFormation resource under it (of
 * `resourceType`, if given), with its reason, in two places:
 * - `Validations.acknowledge("cdk-validator-cfnguard::<rule>")`: what makes synth pass, since
 *   aws-cdk-lib suppresses the plugin's finding on that construct path and records the reason in
 *   the validation report (as is done for cdk-nag here);
 * - `Metadata.guard.SuppressedRules` (plus `Metadata.guard.Reasons`) on each resource: the
 *   convention of the AWS Guard Rules Registry, so the template itself says what was acknowledged
 *   and why. cfn-guard 3.1.1 with the bundled Control Tower rules does not read it (checked), so
 *   this record alone would not silence them.
 */
export function acknowledgeGuardRule(
  scope: IConstruct,
  rule: ControlTowerRule,
  reason: string,
  resourceType?: string,
): void {
  Validations.of(scope).acknowledge({ id: `${GUARD_PLUGIN}::${rule}`, reason });
  for (const c of scope.node.findAll()) {
    if (!CfnResource.isCfnResource(c)) continue;
    if (resourceType && c.cfnResourceType !== resourceType) continue;
    const guard = (c.getMetadata("guard") ?? {}) as {
      SuppressedRules?: string[];
      Reasons?: Record<string, string>;
    };
    c.addMetadata("guard", {
      SuppressedRules: [...new Set([...(guard.SuppressedRules ?? []), rule])],
      Reasons: { ...guard.Reasons, [rule]: reason },
    });
  }
}
