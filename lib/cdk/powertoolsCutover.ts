import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import { POWERTOOLS_TABLE_ACTIONS } from "../dedup/powertoolsRecord.ts";

/**
 * Lets a consumer read the idempotency table Powertools wrote, for `idempotency.powertoolsCutover`
 * (docs/migrating-from-powertools.md): `dynamodb:BatchGetItem` (the only call the cut-over makes)
 * on that table alone, and decrypt with its key when the table was imported with one
 * (`Table.fromTableAttributes({ tableName, encryptionKey })`). Remove it with the option, once the
 * window is over.
 */
export function grantPowertoolsTableRead(grantee: iam.IGrantable, table: dynamodb.ITable): iam.Grant {
  const grant = iam.Grant.addToPrincipal({
    grantee,
    actions: [...POWERTOOLS_TABLE_ACTIONS],
    resourceArns: [table.tableArn],
  });
  table.encryptionKey?.grantDecrypt(grantee);
  return grant;
}
