import type { SQSClient } from "@aws-sdk/client-sqs";
import { LeaseLostError } from "../core/errors.ts";
import { checkIntervalMs, renewalDue } from "../core/leaseKeeper.ts";
import type { DedupStore, Lease } from "../dedup/dedupStore.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { defaultHeartbeatAfterMs, HEARTBEAT_DEFAULTS } from "./heartbeatDefaults.ts";
import { changeVisibility, MAX_VISIBILITY_SECONDS } from "./visibility.ts";

/** Tuning of the visibility heartbeat. */
export interface HeartbeatOptions {
  /**
   * Extend in-flight records once this long has passed since the batch was received (the message
   * has been invisible since then, not since the record started). The synth rule for a heartbeat
   * queue (`QueueWithDlq` with `visibilityHeartbeat`) sizes the visibility timeout for this default;
   * see `heartbeatDefaults.ts` for what the heartbeat is for. @default a third of the queue's
   * visibility timeout (`defaultHeartbeatAfterMs`)
   */
  readonly afterMs?: number;
  /** Each beat hides the record for this long from now. @default the queue's visibility timeout */
  readonly extendSeconds?: number;
  /** Never extend past the remaining Lambda time plus this. @default HEARTBEAT_DEFAULTS.marginSeconds (10 s) */
  readonly marginSeconds?: number;
}

/** What the heartbeat needs of the source queue, looked up only when a beat is due. */
export interface HeartbeatQueue {
  readonly url: string;
  readonly visibilityTimeoutSeconds: number;
}

interface Tracked {
  readonly id: string;
  readonly receiptHandle: string;
  lease: Lease | undefined;
  /** The lease's length as granted: renewed once less than half of it is left. */
  leaseLengthMs: number;
  readonly onLeaseLost: () => void;
}

/**
 * Keeps long records invisible (ChangeMessageVisibilityBatch, 10 per call, grouped across records)
 * and their dedup leases alive, so a long job is neither redelivered nor taken over while it runs.
 * The two have their own cadences: visibility is extended a third of the way into it, and a lease
 * is renewed on the cadence every consumer shares (`LEASE_CADENCE`: checked every third of its
 * length, renewed once half of it is gone). A lease is usually far shorter than the visibility
 * timeout (30 s against 6 × the function timeout), and a duplicate delivery may claim its key as
 * soon as it lapses. The consumers track records here for visibility only and keep each running
 * record's lease with `keepLease`; leases passed to `track` are for direct users of this class. It never extends visibility past the Lambda's remaining time plus a margin (a dead
 * invocation must let the message go) nor past SQS's 12-hour cap. Errors are counted, not thrown.
 */
export class VisibilityHeartbeat {
  private readonly tracked = new Map<string, Tracked>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** When visibility was last extended (the receive, at first). */
  private visibleFromMs: number;
  /** The beat in flight, if any: its ChangeMessageVisibility calls must land before the batch's own. */
  private beating: Promise<void> | undefined;
  private afterMs: number;
  private extendSeconds: number | undefined;
  private readonly marginSeconds: number;
  private readonly options: HeartbeatOptions;
  /** The source queue: not looked up yet (undefined), found, or not found (null: no extensions). */
  private queue: HeartbeatQueue | null | undefined;
  private readonly deps: {
    sqs: SQSClient;
    /** Looks the source queue up (GetQueueUrl, GetQueueAttributes); called once, on the first due beat. */
    queue: () => Promise<HeartbeatQueue | undefined>;
    dedup: DedupStore | undefined;
    remainingMs: () => number;
    receivedAtMs: number;
    telemetry: Telemetry;
  };

  constructor(deps: VisibilityHeartbeat["deps"], options: HeartbeatOptions = {}) {
    this.deps = deps;
    this.options = options;
    this.extendSeconds = options.extendSeconds;
    // Until the queue is looked up, its visibility timeout is known to be at least the function
    // timeout (Lambda refuses a trigger with less), and so at least the remaining time: a first beat
    // planned from that, and no later than `lookupAfterMs`, comes no later than the real one. A
    // batch that ends sooner (most do) never calls SQS for its queue at all.
    this.afterMs =
      options.afterMs ??
      Math.min(HEARTBEAT_DEFAULTS.lookupAfterMs, defaultHeartbeatAfterMs(deps.remainingMs() / 1000));
    this.marginSeconds = options.marginSeconds ?? HEARTBEAT_DEFAULTS.marginSeconds;
    this.visibleFromMs = deps.receivedAtMs;
  }

  /** Watches a record from now until `untrack`. */
  track(id: string, receiptHandle: string, lease: Lease | undefined, onLeaseLost: () => void): void {
    this.tracked.set(id, { id, receiptHandle, lease, leaseLengthMs: lengthOf(lease), onLeaseLost });
    this.closed = false;
    this.schedule();
  }

  /** Keeps this lease alive from now on (a claim that landed after `track`). */
  setLease(id: string, lease: Lease): void {
    const t = this.tracked.get(id);
    if (!t) return;
    t.lease = lease;
    t.leaseLengthMs = lengthOf(lease);
    // The next beat may be due sooner now that a (short) lease is held.
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.schedule();
  }

  /** The renewed lease of a record, if the heartbeat renewed it. */
  leaseOf(id: string): Lease | undefined {
    return this.tracked.get(id)?.lease;
  }

  private schedule(): void {
    if (this.timer || this.closed || this.tracked.size === 0) return;
    let every = this.afterMs / 2;
    for (const t of this.tracked.values())
      if (t.lease) every = Math.min(every, checkIntervalMs(t.leaseLengthMs));
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        void this.beat().then(() => this.schedule());
      },
      Math.max(100, Math.floor(every)),
    );
  }

  /** Stops watching a record the moment it finishes or fails. */
  untrack(id: string): void {
    this.tracked.delete(id);
    if (this.tracked.size === 0) void this.stop();
  }

  /**
   * Stops beating and resolves once a beat still in flight has landed. Await it before setting a
   * failed record's retry visibility: a late extension would otherwise overwrite the backoff and
   * hide the record for a whole visibility timeout.
   */
  async stop(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.beating;
  }

  private horizonSeconds(now: number): number {
    const byLambda = this.deps.remainingMs() / 1000 + this.marginSeconds;
    const bySqsCap = MAX_VISIBILITY_SECONDS - (now - this.deps.receivedAtMs) / 1000 - 1;
    return Math.floor(Math.min(this.extendSeconds ?? Number.POSITIVE_INFINITY, byLambda, bySqsCap));
  }

  /** Looks the queue up once; the beat schedule then follows its real visibility timeout. */
  private async knowQueue(): Promise<HeartbeatQueue | null> {
    if (this.queue === undefined) {
      this.queue = (await this.deps.queue()) ?? null;
      if (this.queue) {
        const visibility = this.queue.visibilityTimeoutSeconds;
        this.afterMs = this.options.afterMs ?? defaultHeartbeatAfterMs(visibility);
        this.extendSeconds = this.options.extendSeconds ?? Math.max(visibility, 1);
      } else {
        this.deps.telemetry.count(METRIC.heartbeatErrors);
      }
    }
    return this.queue;
  }

  private beat(): Promise<void> {
    if (this.beating) return this.beating;
    this.beating = this.extend().finally(() => {
      this.beating = undefined;
    });
    return this.beating;
  }

  private async extend(): Promise<void> {
    try {
      const now = Date.now();
      const all = [...this.tracked.values()];
      const due = () => now - this.visibleFromMs >= this.afterMs;
      const queue = due() ? await this.knowQueue() : undefined;
      // Due by the provisional schedule, maybe not by the queue's real visibility timeout.
      const visibility = queue && due() ? all : [];
      const seconds = this.horizonSeconds(now);
      if (seconds <= 0) return;
      const renewals = all.filter((t) => t.lease && renewalDue(t.lease, t.leaseLengthMs, now));
      if (visibility.length === 0 && renewals.length === 0) return;
      const { sqs, dedup, telemetry } = this.deps;
      const [failed] = await Promise.all([
        queue && visibility.length > 0
          ? changeVisibility(
              sqs,
              queue.url,
              visibility.map((t) => ({ id: t.id, receiptHandle: t.receiptHandle, seconds })),
            )
          : Promise.resolve([] as string[]),
        ...renewals.map(async (t) => {
          if (!dedup || !t.lease) return;
          try {
            t.lease = await dedup.renew(t.lease, t.leaseLengthMs);
          } catch (error) {
            if (!this.tracked.has(t.id)) return; // finished meanwhile: its completion ended the lease
            telemetry.count(error instanceof LeaseLostError ? METRIC.leasesLost : METRIC.heartbeatErrors);
            telemetry.logger.warn("heartbeat could not renew the dedup lease", { messageId: t.id, error });
            if (error instanceof LeaseLostError) t.onLeaseLost();
          }
        }),
      ]);
      if (visibility.length > 0) {
        this.visibleFromMs = now;
        telemetry.count(METRIC.heartbeatExtensions, visibility.length - failed.length);
      }
      if (failed.length > 0) {
        telemetry.count(METRIC.heartbeatErrors, failed.length);
        telemetry.logger.warn("heartbeat could not extend visibility", { messageIds: failed });
      }
    } catch (error) {
      this.deps.telemetry.count(METRIC.heartbeatErrors);
      this.deps.telemetry.logger.warn("heartbeat failed", { error });
    }
  }
}

/** A lease's length, measured when it is handed over (just granted or renewed). */
function lengthOf(lease: Lease | undefined): number {
  return lease ? Math.max(1, lease.expiresAtMs - Date.now()) : 0;
}
