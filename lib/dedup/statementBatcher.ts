import { setTimeout as sleep } from "node:timers/promises";
import {
  type AttributeValue,
  BatchExecuteStatementCommand,
  type BatchStatementRequest,
  type BatchStatementResponse,
  type DynamoDBClient,
} from "@aws-sdk/client-dynamodb";

/** DynamoDB's limit: statements in one BatchExecuteStatement, and requests in one BatchWriteItem. */
export const DYNAMODB_BATCH_LIMIT = 25;

export interface BatchingOptions {
  /** Statements per BatchExecuteStatement call (1..25, DynamoDB's limit). @default 25 */
  readonly maxBatch?: number;
  /** The longest a statement waits for company before it is sent. */
  readonly maxDelayMs?: number;
  /**
   * A group also goes once no statement has joined it for this long: a burst (the completions of
   * records whose claims came back together) goes when it ends, not `maxDelayMs` after it began,
   * while statements that trickle in still wait for company. @default min(2, maxDelayMs)
   */
  readonly idleMs?: number;
  /** Rounds for statements that failed with throttling or an internal error. @default 4 */
  readonly maxRounds?: number;
}

/** One statement's fate: DynamoDB answers each statement of a batch on its own. */
export type StatementResult =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly code: string;
      readonly message: string;
      readonly item?: Record<string, AttributeValue>;
    };

/** One single-item PartiQL statement, and the item it writes. */
export interface Statement {
  /**
   * The item's identity (its key, serialised). A BatchExecuteStatement that names one item twice
   * is rejected whole by DynamoDB (ValidationException "Provided list of item keys contains
   * duplicates"), so two statements on one item never share a request.
   */
  readonly item: string;
  readonly statement: string;
  readonly parameters: AttributeValue[];
  /** Return the item as it was when the condition failed. @default false */
  readonly returnOldOnConditionFailure?: boolean;
}

interface Pending {
  readonly item: string;
  readonly request: BatchStatementRequest;
  resolve(result: StatementResult): void;
  reject(error: unknown): void;
}

/** Statement errors that mean "send this statement again". */
const RETRYABLE = new Set([
  "ThrottlingError",
  "ProvisionedThroughputExceeded",
  "RequestLimitExceeded",
  "InternalServerError",
  "TransactionConflict",
]);

/**
 * Coalesces single-item PartiQL statements issued at about the same time into
 * BatchExecuteStatement calls of up to 25. Each statement keeps its own condition and its own
 * result, and costs what it would cost alone (unlike TransactWriteItems: double the write units,
 * and one failed condition cancels everything). A group goes out when full or `maxDelayMs` after
 * its first statement, so no caller waits long and a crash loses at most one small group.
 */
export class StatementBatcher {
  private readonly client: DynamoDBClient;
  private readonly maxBatch: number;
  private readonly maxDelayMs: number;
  private readonly idleMs: number;
  private readonly maxRounds: number;
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** When the oldest queued statement and the latest one joined (ms, `performance.now()`). */
  private firstAt = 0;
  private lastAt = 0;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(client: DynamoDBClient, options: BatchingOptions, defaultDelayMs: number) {
    this.client = client;
    this.maxBatch = Math.min(Math.max(options.maxBatch ?? DYNAMODB_BATCH_LIMIT, 1), DYNAMODB_BATCH_LIMIT);
    this.maxDelayMs = options.maxDelayMs ?? defaultDelayMs;
    this.idleMs = Math.min(options.idleMs ?? 2, this.maxDelayMs);
    this.maxRounds = options.maxRounds ?? 4;
  }

  /** Resolves with the statement's own result; rejects only when the whole request failed. */
  execute(statement: Statement): Promise<StatementResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({
        item: statement.item,
        request: {
          Statement: statement.statement,
          Parameters: statement.parameters,
          ...(statement.returnOldOnConditionFailure
            ? { ReturnValuesOnConditionCheckFailure: "ALL_OLD" }
            : {}),
        },
        resolve,
        reject,
      });
      this.lastAt = performance.now();
      if (this.queue.length >= this.maxBatch) this.flushNow();
      else if (!this.timer) {
        this.firstAt = this.lastAt;
        this.arm(this.idleMs);
      }
    });
  }

  /** One timer per group, re-armed when it fires early, rather than one per statement. */
  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      const now = performance.now();
      const due = Math.min(this.lastAt + this.idleMs, this.firstAt + this.maxDelayMs);
      if (now >= due) this.flushNow();
      else this.arm(due - now);
    }, ms);
  }

  /**
   * Sends everything queued so far and waits for it (and for whatever was in flight when called).
   * Statements that other callers queue later are not waited for: under concurrent invocations
   * sharing this batcher, one caller's flush must not wait on another's stream of work.
   */
  async flush(): Promise<void> {
    this.flushNow();
    await Promise.allSettled([...this.inFlight]);
  }

  private flushNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) {
      const { group, rest } = takeGroup(this.queue, this.maxBatch);
      this.queue = rest;
      const write = this.send(group).finally(() => this.inFlight.delete(write));
      this.inFlight.add(write);
    }
  }

  private async send(group: Pending[]): Promise<void> {
    let remaining = group;
    for (let round = 1; remaining.length > 0; round++) {
      let responses: BatchStatementResponse[];
      try {
        ({ Responses: responses = [] } = await this.client.send(
          new BatchExecuteStatementCommand({ Statements: remaining.map((p) => p.request) }),
        ));
      } catch (error) {
        // The SDK has already retried the request as a whole.
        for (const p of remaining) p.reject(error);
        return;
      }
      if (responses.length !== remaining.length) {
        // One response per statement, in order, is the contract; anything else proves nothing.
        const error = new Error(
          `BatchExecuteStatement answered ${responses.length} responses for ${remaining.length} statements`,
        );
        for (const p of remaining) p.reject(error);
        return;
      }
      const again: Pending[] = [];
      for (const [i, p] of remaining.entries()) {
        const error = responses[i]?.Error;
        if (!error) {
          p.resolve({ ok: true });
          continue;
        }
        const code = error.Code ?? "Unknown";
        if (RETRYABLE.has(code) && round < this.maxRounds) again.push(p);
        else
          p.resolve({
            ok: false,
            code,
            message: error.Message ?? "",
            ...(error.Item ? { item: error.Item } : {}),
          });
      }
      remaining = again;
      if (remaining.length > 0) await sleep(25 * 2 ** round * Math.random());
    }
  }
}

/**
 * The next request's statements: queue order, at most `max`, and at most one per item. A second
 * statement on an item already in the group waits for a later request (claims and completions are
 * conditional writes, so their order across requests is decided by their conditions, not by us).
 */
export function takeGroup<T extends { readonly item: string }>(
  queue: readonly T[],
  max: number,
): { group: T[]; rest: T[] } {
  const group: T[] = [];
  const rest: T[] = [];
  const items = new Set<string>();
  for (const p of queue) {
    if (group.length < max && !items.has(p.item)) {
      items.add(p.item);
      group.push(p);
    } else rest.push(p);
  }
  return { group, rest };
}
