/**
 * The batch plan both consumers share: one object per record, carried through the stages (decode,
 * in-batch copies, claim, run, settle) instead of parallel maps keyed by record index. Plans live
 * in the invocation's own locals, so concurrent invocations in one process never share one.
 */
import type { Envelope } from "../core/envelope.ts";
import type { ClaimResult, Lease } from "../dedup/dedupStore.ts";
import type { RecordOutcome } from "./recordOutcome.ts";

/** A record read into its envelope (`E`: the adapter's own, e.g. `KafkaEnvelope<T>`), or why it could not be. */
export type Decoded<T, E extends Envelope<T> = Envelope<T>> =
  | { readonly ok: true; readonly envelope: E }
  | { readonly ok: false; readonly error: unknown };

/** Whether an earlier record of the batch has the same dedup id. */
export type InBatchCopy =
  | { readonly kind: "first" }
  /** Same id and same payload: acked with the first, whatever becomes of it (it stays in the queue, or is parked, with it). */
  | { readonly kind: "copy"; readonly of: number }
  /**
   * Same id, other payload: a duplicate or a key reuse, which only the store can tell once the
   * first is done. So it comes back in a later delivery instead of being dropped here.
   */
  | { readonly kind: "other-payload"; readonly of: number };

/** A claim taken (ahead, or just in time), or why it could not be taken. */
export type ClaimAnswer = ClaimResult | { readonly status: "error"; readonly error: unknown };

export interface HeldLease {
  readonly lease: Lease;
  /** The lease's length when it was granted: it is renewed once less than half of that is left. */
  readonly grantedMs: number;
}

/** One record's state through the stages; `E` is the adapter's envelope type, so no stage casts it. */
export interface RecordPlan<R, T, E extends Envelope<T> = Envelope<T>> {
  readonly index: number;
  readonly record: R;
  readonly decoded: Decoded<T, E>;
  readonly copy: InBatchCopy;
  /** Aborted when the record's lease is lost. */
  readonly abort: AbortController;
  /** What the handler gets: aborts on a lost lease or when the Lambda runs out of time. */
  readonly signal: AbortSignal;
  /** The claim taken ahead of the run, if any. */
  claim?: Promise<ClaimAnswer>;
  /** Held from the claim until the record completes or gives it back. */
  lease?: HeldLease;
  /** The fenced completion, awaited before the batch answers. */
  completion?: Promise<void>;
  outcome?: RecordOutcome;
}

/** Decodes every record side by side; a record that cannot be decoded carries its typed error. */
export function decodeRecords<R, T, E extends Envelope<T> = Envelope<T>>(
  records: ReadonlyArray<R>,
  decode: (record: R) => Promise<E>,
): Promise<Decoded<T, E>[]> {
  return Promise.all(
    records.map((record) =>
      decode(record).then(
        (envelope): Decoded<T, E> => ({ ok: true, envelope }),
        (error: unknown): Decoded<T, E> => ({ ok: false, error }),
      ),
    ),
  );
}

/**
 * In-batch duplicates, found in memory before any claim (a second claim of one key in one batch
 * would only collide with ourselves). `undefined` entries (records that could not be decoded) are
 * never a first nor a copy.
 */
export function findInBatchCopies(
  items: ReadonlyArray<{ readonly id: string; readonly raw: string } | undefined>,
): InBatchCopy[] {
  const firstOfId = new Map<string, number>();
  return items.map((item, i): InBatchCopy => {
    if (!item) return { kind: "first" };
    const first = firstOfId.get(item.id);
    if (first === undefined) {
      firstOfId.set(item.id, i);
      return { kind: "first" };
    }
    return items[first]!.raw === item.raw
      ? { kind: "copy", of: first }
      : { kind: "other-payload", of: first };
  });
}

/** One plan per record. `deadline` aborts when the Lambda runs out of time (Middy's signal). */
export function planBatch<R, T, E extends Envelope<T> = Envelope<T>>(
  records: ReadonlyArray<R>,
  decoded: ReadonlyArray<Decoded<T, E>>,
  deadline: AbortSignal | undefined,
): RecordPlan<R, T, E>[] {
  const copies = findInBatchCopies(decoded.map((d) => (d.ok ? d.envelope : undefined)));
  return records.map((record, index) => {
    const abort = new AbortController();
    return {
      index,
      record,
      decoded: decoded[index]!,
      copy: copies[index]!,
      abort,
      signal: deadline ? AbortSignal.any([abort.signal, deadline]) : abort.signal,
    };
  });
}

export interface Unfinished<R> {
  readonly record: R;
  readonly delaySeconds: number;
}

/** Every record not done, in batch order. A record with no outcome (a bug, a crash) is never acked. */
export function unfinishedOf<R>(
  plans: ReadonlyArray<{ readonly record: R; readonly outcome?: RecordOutcome | undefined }>,
): Unfinished<R>[] {
  return plans.flatMap((p) =>
    p.outcome?.kind === "done" ? [] : [{ record: p.record, delaySeconds: p.outcome?.delaySeconds ?? 0 }],
  );
}
