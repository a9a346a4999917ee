/**
 * Committing a staged unit of work: the preflight (what DynamoDB would reject for size or shape,
 * caught before sending), then one TransactWriteItems of marker + business writes + events
 * (+ heads). When only aggregate heads moved under it (this container's guess was stale, or
 * another writer of the aggregate committed first), the heads are learned from the cancellation
 * and the transaction is sent again, renumbered.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { type DynamoDBClient, TransactWriteItemsCommand } from "@aws-sdk/client-dynamodb";
import type { Envelope } from "../core/envelope.ts";
import type { AggregateHeads } from "./aggregateHeads.ts";
import { TransactionConflictError, UnitOfWorkInvalidError, UnitOfWorkTooLargeError } from "./errors.ts";
import type { TRANSACTION_LIMITS } from "./itemSize.ts";
import type { OutboxEvent } from "./outboxEvent.ts";
import { eventActions, type Staged, type StagingConfig } from "./stagedWrites.ts";
import { type Interpreted, interpretFailure } from "./transactionFailure.ts";

/**
 * Attempts of one unit of work when only aggregate heads moved under it (a stale guess, or other
 * writers of the aggregate committing first: with k of them at once, the last needs k attempts).
 * After that, a transient TransactionConflictError: the message is retried.
 */
const HEAD_ATTEMPTS = 10;

/** What a commit needs besides the unit: the client, the heads this container knows, the limits. */
export interface CommitDeps {
  readonly client: DynamoDBClient;
  readonly config: StagingConfig;
  /** Undefined when `aggregateSequence` is off: events go unnumbered, with no head. */
  readonly heads: AggregateHeads | undefined;
  readonly limits: typeof TRANSACTION_LIMITS;
}

/** Committed (with its action count and estimated size in bytes), or what the failure meant. */
export type CommitOutcome =
  | { status: "committed"; actions: number; estimatedBytes: number }
  | Exclude<Interpreted, { status: "head-moved" }>;

/** Commits: marker + business writes + events (+ heads), sent again while only heads moved. */
export async function commitUnit(
  deps: CommitDeps,
  unit: { envelope: Envelope; written: ReadonlyArray<Staged>; events: ReadonlyArray<OutboxEvent> },
  payloadHash: string | undefined,
): Promise<CommitOutcome> {
  const { client, config, heads, limits } = deps;
  for (let attempt = 1; ; attempt++) {
    const { staged: eventStaged, headWrites } = eventActions(config, heads, unit.events);
    const staged = [...unit.written, ...eventStaged];
    const estimatedBytes = preflight(staged, unit.events.length, headWrites.length, limits);
    try {
      await client.send(new TransactWriteItemsCommand({ TransactItems: staged.map((s) => s.action) }));
      heads?.committed(headWrites);
      return { status: "committed", actions: staged.length, estimatedBytes };
    } catch (error) {
      const outcome = interpretFailure(error, staged, payloadHash, config.scope, unit.envelope.id);
      if (outcome.status !== "head-moved") return outcome;
      for (const h of outcome.heads) if (h.learned) heads?.learned(h.pk, h.item);
      if (attempt >= HEAD_ATTEMPTS) {
        return {
          status: "error",
          error: new TransactionConflictError(
            `the heads of ${outcome.heads.map((h) => h.pk).join(", ")} kept moving (${attempt} attempts)`,
            { cause: error },
          ),
        };
      }
      // A conflict, or a head that keeps moving: back off a little (jittered) before the next try.
      if (attempt > 1 || outcome.heads.some((h) => !h.learned)) await sleep(Math.random() * 10 * attempt);
    }
  }
}

/** What DynamoDB would reject for size or shape; returns the transaction's estimated size. */
export function preflight(
  staged: ReadonlyArray<Staged>,
  eventCount: number,
  headCount: number,
  limits: typeof TRANSACTION_LIMITS,
): number {
  const estimatedBytes = staged.reduce((sum, s) => sum + s.bytes, 0);
  if (staged.length > limits.maxActions) {
    const writes = staged.length - 1 - eventCount - headCount;
    throw new UnitOfWorkTooLargeError(
      `unit of work has ${staged.length} actions (inbox marker + ${writes} writes + ${eventCount} events${headCount ? ` + ${headCount} aggregate head${headCount > 1 ? "s" : ""}` : ""}); one transaction holds at most ${limits.maxActions}`,
      staged.length,
      estimatedBytes,
    );
  }
  if (estimatedBytes > limits.maxTransactionBytes) {
    throw new UnitOfWorkTooLargeError(
      `unit of work is about ${estimatedBytes} bytes; one transaction holds at most ${limits.maxTransactionBytes}`,
      staged.length,
      estimatedBytes,
    );
  }
  const seen = new Map<string, string>();
  for (const s of staged) {
    if (s.action.Put && s.bytes > limits.maxItemBytes) {
      throw new UnitOfWorkTooLargeError(
        `staged write '${s.label}' is about ${s.bytes} bytes; an item holds at most ${limits.maxItemBytes}`,
        staged.length,
        estimatedBytes,
      );
    }
    if (s.itemKey === undefined) continue;
    const other = seen.get(s.itemKey);
    if (other !== undefined) {
      throw new UnitOfWorkInvalidError(
        `staged writes '${other}' and '${s.label}' target the same item; a transaction may touch an item once`,
      );
    }
    seen.set(s.itemKey, s.label);
  }
  return estimatedBytes;
}
