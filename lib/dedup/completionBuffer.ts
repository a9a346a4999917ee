import { setTimeout as sleep } from "node:timers/promises";
import {
  type AttributeValue,
  BatchExecuteStatementCommand,
  type BatchStatementRequest,
  type BatchStatementResponse,
  type DynamoDBClient,
} from "@aws-sdk/client-dynamodb";
import { LeaseLostError } from "../core/errors.ts";

interface Pending {
  readonly statement: BatchStatementRequest;
  readonly describe: string;
  resolve(): void;
  reject(error: unknown): void;
}

export interface CompletionBufferOptions {
  /** Completions per BatchExecuteStatement call (1..25, DynamoDB's limit). @default 25 */
  readonly maxBatch?: number;
  /** The longest a completion waits for company before it is written. @default 10 ms */
  readonly maxDelayMs?: number;
  /** Rounds for statements that failed with throttling or an internal error. @default 4 */
  readonly maxRounds?: number;
}

/** PartiQL statement errors that mean "try this statement again". */
const RETRYABLE = new Set([
  "ThrottlingError",
  "ProvisionedThroughputExceeded",
  "RequestLimitExceeded",
  "InternalServerError",
  "TransactionConflict",
]);

/**
 * Groups fenced completions into BatchExecuteStatement calls: up to 25 PartiQL UPDATEs per
 * request, each with its own `WHERE leaseToken = ?` condition. Unlike TransactWriteItems, the
 * statements succeed or fail one by one and cost one write unit each (a transaction costs two and
 * fails whole). A group is flushed when full or `maxDelayMs` after its first entry, so a crash
 * re-runs at most one small group, never a whole batch.
 */
export class CompletionBuffer {
  private readonly client: DynamoDBClient;
  private readonly maxBatch: number;
  private readonly maxDelayMs: number;
  private readonly maxRounds: number;
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(client: DynamoDBClient, options: CompletionBufferOptions = {}) {
    this.client = client;
    this.maxBatch = Math.min(Math.max(options.maxBatch ?? 25, 1), 25);
    this.maxDelayMs = options.maxDelayMs ?? 10;
    this.maxRounds = options.maxRounds ?? 4;
  }

  add(statement: string, parameters: AttributeValue[], describe: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ statement: { Statement: statement, Parameters: parameters }, describe, resolve, reject });
      if (this.queue.length >= this.maxBatch) this.flushNow();
      else this.timer ??= setTimeout(() => this.flushNow(), this.maxDelayMs);
    });
  }

  /** Writes everything queued and waits for every write in flight. */
  async flush(): Promise<void> {
    this.flushNow();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private flushNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) {
      const group = this.queue.splice(0, this.maxBatch);
      const write = this.write(group).finally(() => this.inFlight.delete(write));
      this.inFlight.add(write);
    }
  }

  private async write(group: Pending[]): Promise<void> {
    let remaining = group;
    for (let round = 1; remaining.length > 0; round++) {
      let responses: BatchStatementResponse[];
      try {
        ({ Responses: responses = [] } = await this.client.send(
          new BatchExecuteStatementCommand({ Statements: remaining.map((p) => p.statement) }),
        ));
      } catch (error) {
        // The SDK already retried the request itself.
        for (const p of remaining) p.reject(error);
        return;
      }
      const again: Pending[] = [];
      remaining.forEach((p, i) => {
        const error = responses[i]?.Error;
        if (!error) p.resolve();
        else if (error.Code === "ConditionalCheckFailed")
          p.reject(new LeaseLostError(`lease lost before completion of ${p.describe}`));
        else if (RETRYABLE.has(error.Code ?? "") && round < this.maxRounds) again.push(p);
        else p.reject(new Error(`completion of ${p.describe} failed: ${error.Code}: ${error.Message}`));
      });
      remaining = again;
      if (remaining.length > 0) await sleep(25 * 2 ** round * Math.random());
    }
  }
}
