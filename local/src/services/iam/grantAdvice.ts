/**
 * The grant that would allow a denied call, in CDK terms: the `grant*` method of the construct
 * that owns the resource (or ours: `MskGrants.produce`, `fn.useSchemaRegistry`), and the bare
 * statement for anyone wiring it by hand. Pure: it reads only the action, the ARN and a path.
 */

const SQS_CONSUME = new Set([
  "ReceiveMessage",
  "DeleteMessage",
  "ChangeMessageVisibility",
  "GetQueueAttributes",
  "GetQueueUrl",
]);
const DYNAMO_READ = new Set([
  "GetItem",
  "BatchGetItem",
  "Query",
  "Scan",
  "ConditionCheckItem",
  "DescribeTable",
  "PartiQLSelect",
]);
const DYNAMO_WRITE = new Set([
  "PutItem",
  "UpdateItem",
  "DeleteItem",
  "BatchWriteItem",
  "PartiQLInsert",
  "PartiQLUpdate",
  "PartiQLDelete",
]);
const STREAM_READ = new Set(["DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"]);

/** The CDK call that grants `action` on `resource`, e.g. `queue.grantSendMessages(fn)`. */
function cdkGrant(action: string, resource: string, construct: string): string | undefined {
  const [service, name = ""] = action.split(":") as [string, string | undefined];
  const on = construct;
  switch (service) {
    case "sqs":
      if (name === "SendMessage") return `${on}.grantSendMessages(fn)`;
      if (SQS_CONSUME.has(name)) return `${on}.grantConsumeMessages(fn)`;
      if (name === "PurgeQueue") return `${on}.grantPurge(fn)`;
      return undefined;
    case "dynamodb":
      if (STREAM_READ.has(name)) return `${on}.grantStreamRead(fn)`;
      if (DYNAMO_READ.has(name)) return `${on}.grantReadData(fn)`;
      if (DYNAMO_WRITE.has(name)) return `${on}.grantWriteData(fn)`;
      return undefined;
    case "kms":
      return name === "Decrypt" ? `${on}.grantDecrypt(fn)` : `${on}.grantEncryptDecrypt(fn)`;
    case "kafka-cluster": {
      const topic = /:topic\/[^/]+\/[^/]+\/(.+)$/.exec(resource)?.[1];
      const group = /:group\/[^/]+\/[^/]+\/(.+)$/.exec(resource)?.[1];
      if (name === "ReadData" || group)
        return `MskGrants.consume(fn, this, cluster, [${topic ? `"${topic}"` : "…"}], [${group ? `"${group}"` : "…"}])`;
      if (name === "CreateTopic" || name.endsWith("TopicDynamicConfiguration"))
        return `MskGrants.administerTopics(fn, this, cluster, [${topic ? `"${topic}"` : "…"}])`;
      return `MskGrants.produce(fn, this, cluster, [${topic ? `"${topic}"` : "…"}])`;
    }
    case "glue":
      return `fn.useSchemaRegistry({ kind: "glue", registryArn${name === "RegisterSchemaVersion" || name === "CreateSchema" ? ", register: true" : ""} })`;
    case "secretsmanager":
      return `${on}.grantRead(fn)`;
    case "lambda":
      return `${on}.addPermission(…)`;
    default:
      return undefined;
  }
}

/**
 * `queue.grantSendMessages(fn) on Orders/Queue, or the statement
 * {"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:…"}`.
 */
export function grantAdvice(action: string, resource: string, constructPath: string | undefined): string {
  const statement = JSON.stringify({ Effect: "Allow", Action: action, Resource: resource });
  const construct = constructPath ? (constructPath.split("/").at(-1) ?? constructPath) : "resource";
  const call = cdkGrant(action, resource, lowerFirst(construct));
  return call
    ? `${call}${constructPath ? ` (${constructPath})` : ""}, or the statement ${statement}`
    : `the statement ${statement}`;
}

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);
