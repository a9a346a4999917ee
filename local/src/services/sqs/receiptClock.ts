/**
 * When the gateway handed out each receipt handle. SQS counts a message's total visibility (at most
 * 12 h) from its receive, and fauxqs does not: the gateway remembers the receives it forwarded so
 * that the visibility quotas (enforcement.ts) can count from them.
 */

/** How long a receipt handle matters: past 12 h no visibility change can be valid anyway. */
const RECEIPT_LIFETIME_MS = 43_200_000;
/** Above this many handles, the ones past their lifetime are forgotten. */
const PRUNE_ABOVE = 200_000;

/** The receive time of every receipt handle the gateway forwarded. */
export interface ReceiptClock {
  /** Notes every receipt handle in a ReceiveMessage answer (its JSON text) as handed out now. */
  remember(answer: string): void;
  /** When `handle` was handed out, in epoch ms; `undefined` when the gateway never saw it. */
  receivedAt(handle: string): number | undefined;
}

/** An empty receipt clock reading `now` (epoch ms). */
export function createReceiptClock(now: () => number): ReceiptClock {
  const received = new Map<string, number>();
  return {
    remember(answer) {
      const t = now();
      for (const m of answer.matchAll(/"ReceiptHandle"\s*:\s*"([^"]+)"/g)) received.set(m[1]!, t);
      if (received.size > PRUNE_ABOVE)
        for (const [h, at] of received) if (t - at > RECEIPT_LIFETIME_MS) received.delete(h);
    },
    receivedAt: (handle) => received.get(handle),
  };
}
