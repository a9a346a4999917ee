import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { itemSize } from "../lib/outbox/itemSize.ts";

/**
 * Requests and capacity units, as DynamoDB would bill them. DynamoDB Local's own `ConsumedCapacity`
 * cannot stand in: it reports none for BatchExecuteStatement or for a write whose condition
 * failed, both of which DynamoDB bills. So the units are counted from the requests: items of at
 * most 1 KB written (1 unit, 2 in a transaction; a failed condition costs the write too) and at
 * most 4 KB read (1 unit strongly consistent, 0.5 eventually; a Query by the bytes it returned).
 */
export interface DynamoDbCount {
  requests: number;
  writeUnits: number;
  readUnits: number;
  byCommand: Record<string, number>;
  /**
   * Milliseconds with at least one request in flight: against a run's wall time, the share in which
   * DynamoDB had work from this client at all (where a ceiling fraction's rest goes).
   */
  busyMs: number;
  /** In-flight requests integrated over time (request-milliseconds): ÷ wall time, the mean depth. */
  depthMs: number;
}

type Input = {
  TransactItems?: unknown[];
  RequestItems?: Record<string, unknown[] | { Keys?: unknown[]; ConsistentRead?: boolean }>;
  Statements?: unknown[];
  ConsistentRead?: boolean;
};

function writeUnitsOf(name: string, input: Input | undefined): number {
  if (name === "TransactWriteItems") return 2 * (input?.TransactItems?.length ?? 0);
  if (name === "BatchWriteItem")
    return Object.values(input?.RequestItems ?? {}).reduce(
      (a, l) => a + (Array.isArray(l) ? l.length : 0),
      0,
    );
  if (name === "BatchExecuteStatement") return input?.Statements?.length ?? 0; // our statements all write
  return ["PutItem", "UpdateItem", "DeleteItem"].includes(name) ? 1 : 0;
}

function readUnitsOf(name: string, input: Input | undefined, output: unknown): number {
  const unit = (consistent: boolean | undefined) => (consistent ? 1 : 0.5);
  if (name === "GetItem") return unit(input?.ConsistentRead);
  if (name === "BatchGetItem") {
    return Object.values(input?.RequestItems ?? {}).reduce(
      (a, r) => a + (Array.isArray(r) ? 0 : (r.Keys?.length ?? 0) * unit(r.ConsistentRead)),
      0,
    );
  }
  if (name === "Query") {
    const items = (output as { Items?: Record<string, AttributeValue>[] } | undefined)?.Items ?? [];
    const bytes = items.reduce((a, i) => a + itemSize(i), 0);
    return Math.max(1, Math.ceil(bytes / 4096)) * unit(input?.ConsistentRead);
  }
  return 0;
}

/** Counts every HTTP request a DynamoDB client sends (retries included), with an SDK middleware. */
export function countDynamoDb(client: DynamoDBClient): DynamoDbCount {
  const count: DynamoDbCount = {
    requests: 0,
    writeUnits: 0,
    readUnits: 0,
    byCommand: {},
    busyMs: 0,
    depthMs: 0,
  };
  let inFlight = 0;
  let busySince = 0;
  let changedAt = 0;
  const step = (by: number) => {
    const now = performance.now();
    count.depthMs += inFlight * (now - changedAt);
    changedAt = now;
    inFlight += by;
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context.commandName ?? "unknown").replace(/Command$/, "");
      count.requests++;
      count.byCommand[name] = (count.byCommand[name] ?? 0) + 1;
      const input = (args as { input?: Input }).input;
      count.writeUnits += writeUnitsOf(name, input);
      if (inFlight === 0) busySince = performance.now();
      step(1);
      try {
        const out = await next(args);
        count.readUnits += readUnitsOf(name, input, out.output);
        return out;
      } finally {
        step(-1);
        if (inFlight === 0) count.busyMs += performance.now() - busySince;
      }
    },
    { step: "initialize", name: "benchCountDynamoDb" },
  );
  return count;
}
