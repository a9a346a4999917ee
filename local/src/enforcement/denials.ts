/**
 * Every call the local gateways refused for lack of a grant: what the CLI lists at the end of a
 * run, what each function's log shows live, and what tests assert on.
 */
/** One call refused for lack of a grant. */
export interface Denial {
  /** When it was refused, in ms since the epoch. */
  readonly at: number;
  /** The function whose role made the call (its code, or its event source mapping). */
  readonly functionName: string;
  /** The IAM action refused, e.g. `sqs:SendMessage` or `kafka-cluster:WriteData`. */
  readonly action: string;
  /** The ARN it was refused on (`*` for a call that names no resource). */
  readonly resource: string;
  /** AWS's own message, as the caller's SDK saw it. */
  readonly message: string;
  /** The grant that would allow it, in CDK terms. */
  readonly advice: string;
}

/** The denials of one run: recorded as they happen, listed at the end, summarised with their grants. */
export interface DenialLog {
  /** Adds a denial and tells the subscribers (the gateways call it). */
  record(denial: Denial): void;
  /** Every denial so far, in order. */
  all(): readonly Denial[];
  /** Called with each new denial (the CLI's live output). @returns unsubscribe */
  subscribe(listener: (denial: Denial) => void): () => void;
  /** One line per distinct function + action + resource, with its count and advice. */
  summary(): string[];
}

export function createDenialLog(): DenialLog {
  const denials: Denial[] = [];
  const listeners = new Set<(d: Denial) => void>();
  return {
    record(denial) {
      denials.push(denial);
      for (const l of listeners) l(denial);
    },
    all: () => denials,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    summary() {
      const distinct = new Map<string, { d: Denial; count: number }>();
      for (const d of denials) {
        const key = `${d.functionName}\0${d.action}\0${d.resource}`;
        const seen = distinct.get(key);
        if (seen) seen.count++;
        else distinct.set(key, { d, count: 1 });
      }
      return [...distinct.values()].map(
        ({ d, count }) =>
          `${d.functionName}: ${d.action} on ${d.resource} denied ${count}×; grant it with ${d.advice}`,
      );
    },
  };
}
