/**
 * Outcomes of a publish, per event, and the rule every path of the publisher keeps: once an event
 * of an aggregate failed or was rejected, its later events in the same call are held back
 * (`failed`, retried later), so none overtakes it.
 */
import { PermanentError } from "../core/errors.ts";
import { PublishFailedError } from "./errors.ts";
import type { OutboxEvent, PublishOutcome } from "./outboxEvent.ts";

/** One aggregate across destinations: its events share the partition key of the app table. */
export function aggregateOf(e: OutboxEvent): string {
  return `${e.aggregateType}#${e.aggregateId}`;
}

/** The outcome of an event held back behind an earlier event of its aggregate that failed or was rejected. */
export function behindEarlier(): PublishOutcome {
  return {
    status: "failed",
    error: new PublishFailedError("an earlier event of this aggregate failed or was rejected"),
  };
}

/** A send's error as an outcome: a PermanentError rejects the event (parked), anything else fails it (retried). */
export function asOutcome(error: unknown): PublishOutcome {
  if (error instanceof PermanentError) return { status: "rejected", error };
  return { status: "failed", error: error instanceof Error ? error : new PublishFailedError(String(error)) };
}
