/**
 * A DynamoDB or DynamoDB Streams request as IAM sees it: the action and table, index or stream ARN
 * of each item it touches (TransactWriteItems authorizes each item as its own PutItem, UpdateItem,
 * DeleteItem or ConditionCheckItem; PartiQL statements as PartiQLSelect/Insert/Update/Delete).
 * DynamoDB Local already enforces DynamoDB's size and count limits, in DynamoDB's own words.
 */
import type { AuthzRequest } from "../iam/iamEvaluator.ts";

export interface DynamoArns {
  tableArn(name: string): string;
  /** The customer-managed key of a table, if any. */
  keyOf(tableArn: string): string | undefined;
}

type Body = Record<string, unknown>;

const WRITES = new Set([
  "PutItem",
  "UpdateItem",
  "DeleteItem",
  "BatchWriteItem",
  "PartiQLInsert",
  "PartiQLUpdate",
  "PartiQLDelete",
]);
const READS = new Set(["GetItem", "Query", "Scan", "BatchGetItem", "ConditionCheckItem", "PartiQLSelect"]);

/** `SELECT … FROM "t"."i"`, `INSERT INTO "t"`, `UPDATE "t"`, `DELETE FROM "t"` → action and table (and index). */
export function partiqlTarget(
  statement: string,
): { action: string; table: string; index?: string } | undefined {
  const name = `(?:"((?:[^"]|"")+)"|([A-Za-z0-9_.-]+))`;
  const s = statement.trim();
  const patterns: Array<[RegExp, string]> = [
    [new RegExp(`^select\\b[\\s\\S]*?\\bfrom\\s+${name}(?:\\.${name})?`, "i"), "PartiQLSelect"],
    [new RegExp(`^insert\\s+into\\s+${name}`, "i"), "PartiQLInsert"],
    [new RegExp(`^update\\s+${name}`, "i"), "PartiQLUpdate"],
    [new RegExp(`^delete\\s+from\\s+${name}`, "i"), "PartiQLDelete"],
  ];
  for (const [re, action] of patterns) {
    const m = re.exec(s);
    if (!m) continue;
    const table = (m[1] ?? m[2] ?? "").replaceAll('""', '"');
    const index = m[3] ?? m[4];
    return { action, table, ...(index ? { index: index.replaceAll('""', '"') } : {}) };
  }
  return undefined;
}

function withKey(out: AuthzRequest[], action: string, tableArn: string, arns: DynamoArns, region: string) {
  const key = arns.keyOf(tableArn);
  const op = action.slice("dynamodb:".length);
  if (!key || !(WRITES.has(op) || READS.has(op))) return;
  // DynamoDB decrypts the table key with the caller's permission on a customer-managed key.
  out.push({
    action: "kms:Decrypt",
    resource: key,
    context: { "kms:ViaService": `dynamodb.${region}.amazonaws.com` },
  });
}

/** The IAM questions one DynamoDB request asks. */
export function dynamodbAuthz(
  operation: string,
  body: Body,
  arns: DynamoArns,
  region: string,
): AuthzRequest[] {
  const out: AuthzRequest[] = [];
  const add = (op: string, table: string, index?: string) => {
    const arn = arns.tableArn(table);
    const action = `dynamodb:${op}`;
    out.push({ action, resource: index ? `${arn}/index/${index}` : arn });
    withKey(out, action, arn, arns, region);
  };
  switch (operation) {
    case "BatchGetItem":
    case "BatchWriteItem":
      for (const table of Object.keys((body.RequestItems as Body | undefined) ?? {})) add(operation, table);
      return out;
    case "TransactWriteItems":
    case "TransactGetItems": {
      const ops: Record<string, string> = {
        Put: "PutItem",
        Update: "UpdateItem",
        Delete: "DeleteItem",
        ConditionCheck: "ConditionCheckItem",
        Get: "GetItem",
      };
      for (const item of (body.TransactItems as Body[] | undefined) ?? [])
        for (const [kind, op] of Object.entries(ops)) {
          const x = item[kind] as { TableName?: string } | undefined;
          if (x?.TableName) add(op, x.TableName);
        }
      return out;
    }
    case "ExecuteStatement":
    case "BatchExecuteStatement":
    case "ExecuteTransaction": {
      const statements =
        operation === "ExecuteStatement"
          ? [body.Statement]
          : (
              ((operation === "ExecuteTransaction" ? body.TransactStatements : body.Statements) as
                | Array<{ Statement?: unknown }>
                | undefined) ?? []
            ).map((s) => s.Statement);
      for (const statement of statements) {
        const target = typeof statement === "string" ? partiqlTarget(statement) : undefined;
        if (target) add(target.action, target.table, target.index);
        else out.push({ action: "dynamodb:PartiQLSelect", resource: "*" });
      }
      return out;
    }
    default: {
      if (typeof body.TableName === "string")
        add(operation, body.TableName, typeof body.IndexName === "string" ? body.IndexName : undefined);
      else if (typeof body.TableArn === "string")
        out.push({ action: `dynamodb:${operation}`, resource: body.TableArn });
      else if (typeof body.ResourceArn === "string")
        out.push({ action: `dynamodb:${operation}`, resource: body.ResourceArn });
      else out.push({ action: `dynamodb:${operation}`, resource: "*" });
      return out;
    }
  }
}

/**
 * The IAM question of one DynamoDB Streams request: the stream ARN is in the request, or at the
 * head of a DynamoDB Local shard iterator (`<stream arn>|…`), as the service resolves it.
 */
export function streamsAuthz(operation: string, body: Body): AuthzRequest[] {
  const action = `dynamodb:${operation}`;
  if (typeof body.StreamArn === "string") return [{ action, resource: body.StreamArn }];
  if (typeof body.ShardIterator === "string") {
    const arn = body.ShardIterator.split("|")[0] ?? "";
    return [{ action, resource: arn.startsWith("arn:") ? arn : "*" }];
  }
  return [{ action, resource: "*" }];
}
