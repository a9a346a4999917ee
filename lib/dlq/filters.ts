/**
 * Which dead letters a move (replay, redrive) or an inspection takes. Pure.
 *
 * - `errorTypes`: the type part of `x-last-error` (`InvalidJsonError: …` → `InvalidJsonError`).
 *   Messages dead-lettered by the broker itself (SQS maxReceiveCount) carry no context; their type
 *   is `unknown`.
 * - `since` / `until`: when the message was dead-lettered (the DLQ record's timestamp, or SQS
 *   SentTimestamp), inclusive / exclusive.
 * - `ids`: these dead letters only: an SQS DLQ message's MessageId, a Kafka dead letter's
 *   `<partition>:<offset>` (with `#<i>` for the records after the first of a document Lambda
 *   wrote, as `KafkaDeadLetter.id` has it).
 */
export interface DeadLetterFilter {
  /** Only dead letters of these error types (`unknown` for those with no context). @default - every type */
  readonly errorTypes?: readonly string[];
  /** Only these dead letters: SQS MessageIds, Kafka `<partition>:<offset>`s (see above). */
  readonly ids?: readonly string[];
  /** Only those dead-lettered at or after this time. @default - no lower bound */
  readonly since?: Date;
  /** Only those dead-lettered before this time. @default - no upper bound */
  readonly until?: Date;
}

/** The error type of a dead letter whose context names none. */
export const UNKNOWN_ERROR_TYPE = "unknown";

/** `"InvalidJsonError: value is not valid JSON"` → `"InvalidJsonError"`. */
export function errorTypeOf(lastError: string | undefined): string {
  if (!lastError) return UNKNOWN_ERROR_TYPE;
  const at = lastError.indexOf(":");
  const type = (at < 0 ? lastError : lastError.slice(0, at)).trim();
  return type || UNKNOWN_ERROR_TYPE;
}

/** Whether a filter selects anything less than every dead letter. */
export function isFiltering(filter: DeadLetterFilter): boolean {
  return Boolean(filter.errorTypes?.length || filter.ids?.length || filter.since || filter.until);
}

/** Whether a dead letter matches a filter. */
export function matchesFilter(
  filter: DeadLetterFilter,
  letter: { readonly errorType: string; readonly deadLetteredAtMs: number; readonly id?: string },
): boolean {
  if (filter.errorTypes?.length && !filter.errorTypes.includes(letter.errorType)) return false;
  if (filter.ids?.length && (letter.id === undefined || !filter.ids.includes(letter.id))) return false;
  if (filter.since && letter.deadLetteredAtMs < filter.since.getTime()) return false;
  if (filter.until && letter.deadLetteredAtMs >= filter.until.getTime()) return false;
  return true;
}

/** What sits in a DLQ, grouped by error type. */
export interface DeadLetterSummary {
  /** Dead letters counted (those the filter selected). */
  readonly total: number;
  /**
   * Per error type, most frequent first: the count, the oldest and newest dead-lettering times
   * (ISO-8601), the sources (original queue ARNs or topics, sorted) and one error text (up to 200
   * characters).
   */
  readonly byErrorType: Record<
    string,
    { count: number; oldest: string; newest: string; sources: string[]; sampleError: string }
  >;
}

/** Counts dead letters by error type and source. */
export function summarise(
  letters: Iterable<{
    errorType: string;
    deadLetteredAtMs: number;
    source: string | undefined;
    lastError?: string;
  }>,
): DeadLetterSummary {
  let total = 0;
  const by: Record<
    string,
    { count: number; oldestMs: number; newestMs: number; sources: Set<string>; sample: string }
  > = {};
  for (const l of letters) {
    total++;
    const g = by[l.errorType] ?? {
      count: 0,
      oldestMs: Number.POSITIVE_INFINITY,
      newestMs: Number.NEGATIVE_INFINITY,
      sources: new Set<string>(),
      sample: l.lastError ?? "",
    };
    by[l.errorType] = g;
    g.count++;
    g.oldestMs = Math.min(g.oldestMs, l.deadLetteredAtMs);
    g.newestMs = Math.max(g.newestMs, l.deadLetteredAtMs);
    if (l.source) g.sources.add(l.source);
  }
  const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : "");
  return {
    total,
    byErrorType: Object.fromEntries(
      Object.entries(by)
        .sort((a, b) => b[1].count - a[1].count)
        .map(([type, g]) => [
          type,
          {
            count: g.count,
            oldest: iso(g.oldestMs),
            newest: iso(g.newestMs),
            sources: [...g.sources].sort(),
            sampleError: g.sample.slice(0, 200),
          },
        ]),
    ),
  };
}

/** Counts of a redrive or replay, so far or in the end. */
export interface MoveProgress {
  /** Known total to look at (high watermark, or approximate queue depth); 0 when unknown. */
  readonly total: number;
  /** Dead letters looked at so far. */
  readonly seen: number;
  /** Moved to their destination (on a dry run: those that would be). */
  readonly moved: number;
  /** Left in place: not selected by the filter, past the limit, with no destination, or already replayed. */
  readonly skipped: number;
  /** Whose send failed: left in place, to be moved by a later run. */
  readonly failed: number;
}
