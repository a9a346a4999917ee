/**
 * Issue 33 item 7: a consumer that reads Powertools' idempotency table during the cut-over gets
 * exactly the read it makes (BatchGetItem) on that table, and the key's decrypt when the table has
 * one. The first case synthesizes the migration example's stack (examples/migrate-from-powertools).
 */
import { Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import { grantPowertoolsTableRead } from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";
import { OrdersStack } from "../../examples/migrate-from-powertools/stack.ts";
import { testApp } from "./synthHelpers.ts";

type Statement = { Action: string | string[]; Resource: unknown; Effect: string };

/** Every policy statement of the template whose resource mentions `tableName`. */
function statementsOn(template: Template, tableName: string): Statement[] {
  const policies = template.findResources("AWS::IAM::Policy");
  return Object.values(policies).flatMap((p) =>
    (p.Properties.PolicyDocument.Statement as Statement[]).filter((s) =>
      JSON.stringify(s.Resource).includes(`table/${tableName}`),
    ),
  );
}

describe("grantPowertoolsTableRead", () => {
  it("the example stack: its consumer may BatchGetItem Powertools' table, nothing else, and is told where it is", () => {
    const stack = new OrdersStack(testApp(), "Orders", {
      powertoolsTableName: "IdempotencyTable",
      powertoolsFunctionName: "orders-v1",
      cutoverUntil: "2027-01-01T12:00:00Z",
    });
    const template = Template.fromStack(stack);
    const statements = statementsOn(template, "IdempotencyTable");
    expect(statements).toEqual([
      { Action: "dynamodb:BatchGetItem", Effect: "Allow", Resource: expect.anything() },
    ]);
    template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          POWERTOOLS_TABLE_NAME: "IdempotencyTable",
          POWERTOOLS_KEY_PREFIX: "orders-v1",
          POWERTOOLS_CUTOVER_UNTIL: "2027-01-01T12:00:00Z",
        }),
      },
    });
  });

  it("an imported table with a customer-managed key: decrypt with that key too", () => {
    const stack = new Stack(testApp(), "S");
    const key = new kms.Key(stack, "Key");
    const table = dynamodb.Table.fromTableAttributes(stack, "Powertools", {
      tableName: "IdempotencyTable",
      encryptionKey: key,
    });
    const role = new iam.Role(stack, "Role", { assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com") });
    grantPowertoolsTableRead(role, table);
    const template = Template.fromStack(stack);
    expect(statementsOn(template, "IdempotencyTable").map((s) => s.Action)).toEqual([
      "dynamodb:BatchGetItem",
    ]);
    template.hasResourceProperties("AWS::IAM::Policy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Action: "kms:Decrypt", Resource: { "Fn::GetAtt": [Match.anyValue(), "Arn"] } }),
        ]),
      },
    });
  });
});
