import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";

export interface DynamoDbCount {
  requests: number;
  /** Write capacity units consumed, assuming items under 1 KB: 1 per write, 2 per transactional write. */
  writeUnits: number;
  byCommand: Record<string, number>;
}

/** Counts every HTTP request a DynamoDB client sends (retries included), with an SDK middleware. */
export function countDynamoDb(client: DynamoDBClient): DynamoDbCount {
  const count: DynamoDbCount = { requests: 0, writeUnits: 0, byCommand: {} };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context.commandName ?? "unknown").replace(/Command$/, "");
      count.requests++;
      count.byCommand[name] = (count.byCommand[name] ?? 0) + 1;
      const input = (
        args as {
          input?: {
            TransactItems?: unknown[];
            RequestItems?: Record<string, unknown[]>;
            Statements?: unknown[];
          };
        }
      ).input;
      if (name === "TransactWriteItems") count.writeUnits += 2 * (input?.TransactItems?.length ?? 0);
      else if (name === "BatchWriteItem")
        count.writeUnits += Object.values(input?.RequestItems ?? {}).reduce((a, l) => a + l.length, 0);
      else if (name === "BatchExecuteStatement")
        count.writeUnits += input?.Statements?.length ?? 0; // our statements all write
      else if (["PutItem", "UpdateItem", "DeleteItem"].includes(name)) count.writeUnits += 1;
      return next(args);
    },
    { step: "initialize", name: "benchCountDynamoDb" },
  );
  return count;
}
