import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { App, Aspects, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { CfnLintAcknowledgements } from "./cfnLintAcknowledgements.ts";
import { readContext } from "./config.ts";
import { ControlTowerChecks } from "./controlTowerChecks.ts";
import { ReferenceServiceStack } from "./stacks/referenceServiceStack.ts";

/** The CDK app: `npx cdk synth` (offline; see docs/cdk.md for the context values). */
export function buildApp(app: App = new App()): { app: App; stack: ReferenceServiceStack } {
  const context = readContext(app);
  const stack = new ReferenceServiceStack(app, "ReliableConsumersReference", {
    context,
    description: "Reliable message consumers: reference service (SQS, DynamoDB outbox, MSK retry ladder)",
    ...(process.env.CDK_DEFAULT_ACCOUNT && process.env.CDK_DEFAULT_REGION
      ? { env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION } }
      : {}),
  });
  // cdk-nag AwsSolutions, and AWS Control Tower's proactive controls through cfn-guard (the binary
  // and rules ship in @cdklabs/cdk-validator-cfnguard): an unacknowledged finding fails synth.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ControlTowerChecks());
  // cfn-lint (test/infra/cfnLint.test.ts): the findings we accept, with their reasons, in the template.
  Aspects.of(app).add(new CfnLintAcknowledgements());
  return { app, stack };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  buildApp().app.synth();
}
