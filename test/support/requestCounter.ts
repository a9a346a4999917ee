import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";

export interface RequestCount {
  total: number;
  byCommand: Record<string, number>;
}

/**
 * Counts the HTTP requests a DynamoDB client really sends (after retries), per operation, with an
 * SDK middleware: the same way the benchmark counts.
 */
export function countRequests(client: DynamoDBClient): RequestCount {
  const count: RequestCount = { total: 0, byCommand: {} };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      count.total++;
      const name = context.commandName ?? "unknown";
      count.byCommand[name] = (count.byCommand[name] ?? 0) + 1;
      return next(args);
    },
    { step: "finalizeRequest", name: "countRequests", priority: "low" },
  );
  return count;
}
