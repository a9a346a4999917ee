import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type TransactWriteItemsCommandInput,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { LeaseLostError } from "../core/errors.ts";

type TransactItem = NonNullable<TransactWriteItemsCommandInput["TransactItems"]>[number];

interface Pending {
  readonly item: TransactItem;
  readonly describe: string;
  resolve(): void;
  reject(error: unknown): void;
}

export interface CompletionBufferOptions {
  /** Completions per TransactWriteItems call (1..100). @default 25 */
  readonly maxBatch?: number;
  /** The longest a completion waits for company before it is written. @default 10 ms */
  readonly maxDelayMs?: number;
}

/**
 * Groups fenced completions into TransactWriteItems calls: one request per group instead of one per
 * message, with every item still conditional on its lease token. A group is flushed when it is full
 * or `maxDelayMs` after its first entry, so a crash re-runs at most one small group, never the whole
 * batch. A transaction fails as a whole, so when one condition fails we learn from
 * CancellationReasons which items lost their lease, fail those, and write the rest again.
 */
export class CompletionBuffer {
  private readonly maxBatch: number;
  private readonly maxDelayMs: number;
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  private readonly client: DynamoDBClient;

  constructor(client: DynamoDBClient, options: CompletionBufferOptions = {}) {
    this.client = client;
    this.maxBatch = Math.min(Math.max(options.maxBatch ?? 25, 1), 100);
    this.maxDelayMs = options.maxDelayMs ?? 10;
  }

  add(item: TransactItem, describe: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, describe, resolve, reject });
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
    // Each round removes at least one item (a lost lease) or ends; bounded by the group size.
    while (remaining.length > 0) {
      try {
        const only = remaining.length === 1 ? remaining[0]!.item.Update : undefined;
        if (only) {
          // A lone completion is a plain conditional UpdateItem: same request count, half the write units.
          await this.client.send(new UpdateItemCommand(only));
        } else {
          await this.client.send(
            new TransactWriteItemsCommand({ TransactItems: remaining.map((p) => p.item) }),
          );
        }
        for (const p of remaining) p.resolve();
        return;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException && remaining.length === 1) {
          remaining[0]!.reject(
            new LeaseLostError(`lease lost before completion of ${remaining[0]!.describe}`),
          );
          return;
        }
        if (!(error instanceof TransactionCanceledException) || !error.CancellationReasons) {
          for (const p of remaining) p.reject(error);
          return;
        }
        const reasons = error.CancellationReasons;
        const lost = remaining.filter((_, i) => reasons[i]?.Code === "ConditionalCheckFailed");
        if (lost.length === 0) {
          // Conflict or throttling on the whole transaction (the SDK already retried): give up on it.
          for (const p of remaining) p.reject(error);
          return;
        }
        for (const p of lost) p.reject(new LeaseLostError(`lease lost before completion of ${p.describe}`));
        remaining = remaining.filter((_, i) => reasons[i]?.Code !== "ConditionalCheckFailed");
      }
    }
  }
}
