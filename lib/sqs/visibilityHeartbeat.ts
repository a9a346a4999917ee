import type { SQSClient } from "@aws-sdk/client-sqs";
import { LeaseLostError } from "../core/errors.ts";
import type { DedupStore, Lease } from "../dedup/dedupStore.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { changeVisibility, MAX_VISIBILITY_SECONDS } from "./visibility.ts";

export interface HeartbeatOptions {
  /**
   * Extend in-flight records once this long has passed since the batch was received (the message
   * has been invisible since then, not since the record started). @default a third of the queue's
   * visibility timeout
   */
  readonly afterMs?: number;
  /** Each beat hides the record for this long from now. @default the queue's visibility timeout */
  readonly extendSeconds?: number;
  /** Never extend past the remaining Lambda time plus this. @default 10 s */
  readonly marginSeconds?: number;
}

interface Tracked {
  readonly id: string;
  readonly receiptHandle: string;
  lease: Lease | undefined;
  readonly onLeaseLost: () => void;
}

/**
 * Keeps long records invisible (ChangeMessageVisibilityBatch, 10 per call, grouped across records)
 * and renews their dedup leases at the same time, so a long job is neither redelivered nor taken
 * over while it runs. It never extends past the Lambda's remaining time plus a margin (a dead
 * invocation must let the message go) nor past SQS's 12-hour cap. Errors are counted, not thrown.
 */
export class VisibilityHeartbeat {
  private readonly tracked = new Map<string, Tracked>();
  private timer: NodeJS.Timeout | undefined;
  /** The beat in flight, if any: its ChangeMessageVisibility calls must land before the batch's own. */
  private beating: Promise<void> | undefined;
  private readonly afterMs: number;
  private readonly extendSeconds: number;
  private readonly marginSeconds: number;
  private readonly deps: {
    sqs: SQSClient;
    queueUrl: string;
    dedup: DedupStore | undefined;
    remainingMs: () => number;
    receivedAtMs: number;
    telemetry: Telemetry;
  };

  constructor(
    deps: VisibilityHeartbeat["deps"],
    queueVisibilitySeconds: number,
    options: HeartbeatOptions = {},
  ) {
    this.deps = deps;
    this.extendSeconds = options.extendSeconds ?? Math.max(queueVisibilitySeconds, 1);
    this.afterMs = options.afterMs ?? Math.max(300, (queueVisibilitySeconds * 1000) / 3);
    this.marginSeconds = options.marginSeconds ?? 10;
  }

  /** Watches a record from now until `untrack`. */
  track(id: string, receiptHandle: string, lease: Lease | undefined, onLeaseLost: () => void): void {
    this.tracked.set(id, { id, receiptHandle, lease, onLeaseLost });
    this.timer ??= setInterval(() => void this.beat(), Math.max(250, Math.floor(this.afterMs / 2)));
  }

  /** Renews this lease along with the record's visibility from now on (a claim that landed after `track`). */
  setLease(id: string, lease: Lease): void {
    const t = this.tracked.get(id);
    if (t) t.lease = lease;
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
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
  }

  private horizonSeconds(now: number): number {
    const byLambda = this.deps.remainingMs() / 1000 + this.marginSeconds;
    const bySqsCap = MAX_VISIBILITY_SECONDS - (now - this.deps.receivedAtMs) / 1000 - 1;
    return Math.floor(Math.min(this.extendSeconds, byLambda, bySqsCap));
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
      const due = now - this.deps.receivedAtMs >= this.afterMs ? [...this.tracked.values()] : [];
      const seconds = this.horizonSeconds(now);
      if (due.length === 0 || seconds <= 0) return;
      const { sqs, queueUrl, dedup, telemetry } = this.deps;
      const [failed] = await Promise.all([
        changeVisibility(
          sqs,
          queueUrl,
          due.map((t) => ({ id: t.id, receiptHandle: t.receiptHandle, seconds })),
        ),
        ...due.map(async (t) => {
          if (!dedup || !t.lease) return;
          try {
            t.lease = await dedup.renew(t.lease, seconds * 1000);
          } catch (error) {
            if (!this.tracked.has(t.id)) return; // finished meanwhile: its completion ended the lease
            telemetry.count(error instanceof LeaseLostError ? METRIC.leasesLost : METRIC.heartbeatErrors);
            telemetry.logger.warn("heartbeat could not renew the dedup lease", { messageId: t.id, error });
            if (error instanceof LeaseLostError) t.onLeaseLost();
          }
        }),
      ]);
      telemetry.count(METRIC.heartbeatExtensions, due.length - failed.length);
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
