/**
 * One lease renewal cadence for every consumer: a held lease is checked every third of its length
 * and renewed once less than half of it is left. So a renewal has a third of the lease to land
 * before the lease lapses, and a short job (most) never renews at all. No AWS here: `renew` is the
 * dedup store's fenced renewal.
 */
export const LEASE_CADENCE = {
  /** Check a held lease this often, as a fraction of its length. */
  checkEvery: 1 / 3,
  /** Renew once less than this fraction of the length is left. */
  renewBelow: 1 / 2,
  /** No timer fires more often than this. */
  minCheckMs: 100,
} as const;

export interface LeaseLike {
  readonly expiresAtMs: number;
}

/** Whether a lease granted for `grantedMs` is due for renewal at `nowMs`. */
export function renewalDue(lease: LeaseLike, grantedMs: number, nowMs: number): boolean {
  return lease.expiresAtMs - nowMs < grantedMs * LEASE_CADENCE.renewBelow;
}

export function checkIntervalMs(grantedMs: number): number {
  return Math.max(LEASE_CADENCE.minCheckMs, Math.floor(grantedMs * LEASE_CADENCE.checkEvery));
}

export type Renew<L> = (lease: L, lengthMs: number) => Promise<L>;

/**
 * A claim that waited for a slot (or for its turn in a lane) is renewed before its effect starts,
 * once it is due: if it lapsed and another invocation took the key, the fenced renewal rejects
 * (LeaseLostError) and the effect must not run.
 */
export async function renewIfAged<L extends LeaseLike>(
  lease: L,
  grantedMs: number,
  renew: Renew<L>,
  nowMs: number,
): Promise<L> {
  return renewalDue(lease, grantedMs, nowMs) ? renew(lease, grantedMs) : lease;
}

export interface LeaseKeeper<L> {
  /** The lease as last renewed. */
  current(): L;
  /**
   * Stops renewing. A renewal still in flight is ignored when it lands, whatever it answers: after
   * `complete()` or `release()` a fenced renewal fails because the record is done, not because
   * someone else took the key, so it must neither count a lost lease nor abort the record.
   */
  stop(): void;
}

export interface KeepLeaseOptions<L> {
  readonly lease: L;
  readonly grantedMs: number;
  readonly renew: Renew<L>;
  readonly now: () => number;
  /** The renewal was refused because another holder has the key: abort the record's side effects. */
  readonly onLost: (error: unknown) => void;
  /** Any other renewal failure (the next check tries again). */
  readonly onError?: (error: unknown) => void;
  readonly isLost: (error: unknown) => boolean;
}

export function keepLease<L extends LeaseLike>(options: KeepLeaseOptions<L>): LeaseKeeper<L> {
  const { grantedMs, renew, now, onLost, onError, isLost } = options;
  let current = options.lease;
  let stopped = false;
  let inFlight = false;
  const timer = setInterval(() => {
    if (stopped || inFlight || !renewalDue(current, grantedMs, now())) return;
    inFlight = true;
    renew(current, grantedMs).then(
      (renewed) => {
        inFlight = false;
        if (!stopped) current = renewed;
      },
      (error: unknown) => {
        inFlight = false;
        if (stopped) return;
        if (isLost(error)) {
          stopped = true;
          clearInterval(timer);
          onLost(error);
        } else onError?.(error);
      },
    );
  }, checkIntervalMs(grantedMs));
  timer.unref();
  return {
    current: () => current,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
