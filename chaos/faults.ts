import type { Rng } from "./rng.ts";

/**
 * The faults an AWS dependency shows in production, as seen by an SDK client:
 *
 * - `throttle`: a 400 `ThrottlingException` (DynamoDB, SQS under load). Not applied.
 * - `server`: a 500 `InternalServerError`. Not applied.
 * - `reset`: the connection is reset before the request reaches the service. Not applied.
 * - `timeout`: the request reaches the service and IS applied, but the response never comes back
 *   (the client sees a timeout or a reset). The ambiguous failure: the caller cannot know whether
 *   its write happened, and a retry may find its own earlier write.
 */
export const FAULT_KINDS = ["throttle", "server", "reset", "timeout"] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultPlan {
  /** Probability that one request gets a fault, 0..1. */
  readonly rate: number;
  /** Which kinds, picked uniformly. @default all of FAULT_KINDS */
  readonly kinds?: readonly FaultKind[];
  /** Only requests whose operation (e.g. `TransactWriteItems`) passes this. @default every request */
  readonly operations?: (operation: string) => boolean;
}

/** What was injected, by kind and by `<target>:<operation>`: the run's report and the accounting. */
export interface FaultLedger {
  total: number;
  byKind: Record<FaultKind, number>;
  byTarget: Record<string, number>;
}

export function createFaultLedger(): FaultLedger {
  return { total: 0, byKind: { throttle: 0, server: 0, reset: 0, timeout: 0 }, byTarget: {} };
}

export function recordFault(ledger: FaultLedger, kind: FaultKind, target: string): void {
  ledger.total++;
  ledger.byKind[kind]++;
  ledger.byTarget[target] = (ledger.byTarget[target] ?? 0) + 1;
}

/** Decides for one request: a fault kind, or undefined for "let it through". */
export function decideFault(plan: FaultPlan, rng: Rng, operation: string): FaultKind | undefined {
  if (plan.operations && !plan.operations(operation)) return undefined;
  if (!rng.chance(plan.rate)) return undefined;
  return rng.pick(plan.kinds ?? FAULT_KINDS);
}

/** AWS JSON-protocol error bodies (DynamoDB, SQS, Streams all speak awsJson1_0). */
export function faultResponse(kind: "throttle" | "server"): {
  statusCode: number;
  errorType: string;
  body: string;
} {
  return kind === "throttle"
    ? {
        statusCode: 400,
        errorType: "ThrottlingException",
        body: JSON.stringify({ __type: "ThrottlingException", message: "Rate exceeded (chaos)" }),
      }
    : {
        statusCode: 500,
        errorType: "InternalServerError",
        body: JSON.stringify({ __type: "InternalServerError", message: "Internal server error (chaos)" }),
      };
}
