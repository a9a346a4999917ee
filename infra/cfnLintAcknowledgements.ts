import { type IAspect, Stack } from "aws-cdk-lib";
import { CfnFunction } from "aws-cdk-lib/aws-lambda";
import type { IConstruct } from "constructs";

/**
 * cfn-lint findings the reference app accepts, each with its reason, written into the template the
 * way cfn-lint reads them (`Metadata.cfn-lint.config.ignore_checks`) plus our `reasons`, which
 * test/infra/cfnLint.test.ts requires for every ignored check. Anything not listed here fails the
 * suite. Keyed by CloudFormation resource type.
 */
export const CFN_LINT_ACKNOWLEDGEMENTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "AWS::Lambda::Function": {
    W3005:
      "aws-cdk-lib's Function adds DependsOn its execution role (and default policy) beside the Fn::GetAtt of the role, so the policy is attached before the function can be invoked; the duplicate edge is harmless and not ours to remove",
  },
};

/** Writes CFN_LINT_ACKNOWLEDGEMENTS into each matching resource's metadata (merging any already there). */
export class CfnLintAcknowledgements implements IAspect {
  visit(node: IConstruct): void {
    if (!(node instanceof CfnFunction) || !Stack.of(node)) return;
    const acks = CFN_LINT_ACKNOWLEDGEMENTS[CfnFunction.CFN_RESOURCE_TYPE_NAME];
    if (!acks) return;
    const current = (node.getMetadata("cfn-lint") ?? {}) as {
      config?: { ignore_checks?: string[] };
      reasons?: Record<string, string>;
    };
    node.addMetadata("cfn-lint", {
      ...current,
      config: {
        ...current.config,
        ignore_checks: [...new Set([...(current.config?.ignore_checks ?? []), ...Object.keys(acks)])],
      },
      reasons: { ...current.reasons, ...acks },
    });
  }
}
