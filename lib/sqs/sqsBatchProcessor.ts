import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Context, SQSBatchItemFailure, SQSBatchResponse, SQSRecord } from "aws-lambda";
import { type BackoffPolicy, DEFAULT_BACKOFF, fullJitterDelaySeconds } from "../core/backoff.ts";
import type { Envelope } from "../core/envelope.ts";
import { classifyError, describeError, InProgressElsewhereError, LeaseLostError } from "../core/errors.ts";
import { failureContext } from "../core/failureContext.ts";
import { runKeyed } from "../core/keyedScheduler.ts";
import type { ClaimResult, Lease } from "../dedup/dedupStore.ts";
import { createIdempotency, type IdempotencySetting } from "../dedup/idempotency.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { parkInDeadLetterQueue } from "./deadLetter.ts";
import { type QueueInfo, QueueResolver } from "./queueResolver.ts";
import { type SqsEnvelopeOptions, toSqsEnvelope } from "./sqsEnvelope.ts";
import { assertSqsEvent, parseQueueArn } from "./sqsEvent.ts";
import { changeVisibility, type VisibilityChange } from "./visibility.ts";
import { type HeartbeatOptions, VisibilityHeartbeat } from "./visibilityHeartbeat.ts";

export type { IdempotencyOptions } from "../dedup/idempotency.ts";

export interface SqsConsumerOptions<T> extends SqsEnvelopeOptions<T> {
  /**
   * Dedup on DynamoDB; `tableName` defaults to DEDUP_TABLE_NAME and `scope` to the function name.
   * Pass a DedupStore to share one, or `false` for handlers that are idempotent by nature.
   */
  readonly idempotency?: IdempotencySetting;
  /**
   * Records in flight at once (FIFO groups still run in order). The SDK keeps 50 sockets per
   * client, so more only queues. @default 50
   */
  readonly concurrency?: number;
  /** Stop starting records when less Lambda time than this remains. @default 5000 ms */
  readonly timeMarginMs?: number;
  /** Visibility backoff for transient failures. @default base 2 s, cap 900 s, full jitter */
  readonly backoff?: BackoffPolicy;
  /** Where permanent failures go. @default DLQ_URL, else the source queue's RedrivePolicy target */
  readonly deadLetterQueueUrl?: string;
  /** Visibility heartbeat for long records. `false` turns it off. @default on */
  readonly heartbeat?: HeartbeatOptions | false;
  readonly sqsClient: SQSClient;
  readonly dynamodbClient: DynamoDBClient;
  readonly telemetry: Telemetry;
}

export interface RecordContext {
  readonly context: Context;
  readonly record: SQSRecord;
  /** Aborted when this record's lease is lost to another consumer; stop side effects then. */
  readonly signal: AbortSignal;
}

export type SqsRecordHandler<T> = (envelope: Envelope<T>, ctx: RecordContext) => Promise<unknown> | unknown;

type Outcome =
  | { kind: "done"; why: "processed" | "duplicate" | "parked" }
  | { kind: "retry"; delaySeconds: number; error: unknown };

/** Creates the per-container state (clients, caches, dedup stores) once; returns the per-batch function. */
export function createSqsBatchProcessor<T>(handler: SqsRecordHandler<T>, options: SqsConsumerOptions<T>) {
  const { sqsClient: sqs, telemetry } = options;
  const resolver = new QueueResolver(sqs);
  const idempotency = createIdempotency(options.idempotency, options.dynamodbClient);
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const margin = options.timeMarginMs ?? 5000;

  return async function processBatch(event: unknown, context: Context): Promise<SQSBatchResponse> {
    const started = Date.now();
    assertSqsEvent(event);
    const records = event.Records;
    const outcomes: (Outcome | undefined)[] = new Array(records.length);
    const completions: Promise<void>[] = [];
    const dedup = idempotency.storeFor(context.functionName);
    const queues = new Map<string, Promise<QueueInfo | undefined>>();
    const queueOf = (arn: string) => {
      let q = queues.get(arn);
      if (!q) {
        q = resolver
          .resolve(arn, { deadLetterUrl: options.deadLetterQueueUrl ?? process.env.DLQ_URL })
          .catch((error) => {
            telemetry.logger.error("could not resolve the source queue", { queueArn: arn, error });
            return undefined;
          });
        queues.set(arn, q);
      }
      return q;
    };
    // One heartbeat for the batch: every unfinished record has been invisible since the receive.
    let heartbeat: VisibilityHeartbeat | undefined;
    const startHeartbeat = async (arn: string) => {
      if (options.heartbeat === false) return;
      const q = await queueOf(arn);
      if (!q) return;
      heartbeat = new VisibilityHeartbeat(
        {
          sqs,
          queueUrl: q.url,
          dedup,
          remainingMs: () => context.getRemainingTimeInMillis(),
          receivedAtMs: started,
          telemetry,
        },
        q.visibilityTimeoutSeconds,
        options.heartbeat,
      );
    };

    const park = async (record: SQSRecord, error: unknown): Promise<Outcome> => {
      const attempt = Number(record.attributes.ApproximateReceiveCount ?? 1);
      // An explicit DLQ needs no lookup, so parking still works when the source queue can't be resolved.
      const explicit = options.deadLetterQueueUrl ?? process.env.DLQ_URL;
      const deadLetterUrl = explicit ?? (await queueOf(record.eventSourceARN))?.deadLetterUrl;
      if (!deadLetterUrl) {
        telemetry.count(METRIC.parkFailures);
        telemetry.logger.error("permanent failure but no dead-letter queue to park it in", {
          messageId: record.messageId,
          error: describeError(error),
        });
        return { kind: "retry", delaySeconds: fullJitterDelaySeconds(attempt, backoff), error };
      }
      const firstReceive = Number(record.attributes.ApproximateFirstReceiveTimestamp);
      try {
        await parkInDeadLetterQueue(
          sqs,
          deadLetterUrl,
          record,
          failureContext({
            error,
            messageId: record.messageId,
            consumer: context.functionName,
            retryCount: attempt - 1,
            previousFirstFailedAt:
              attempt > 1 && firstReceive ? new Date(firstReceive).toISOString() : undefined,
            originalQueue: record.eventSourceARN,
          }),
        );
      } catch (parkError) {
        // Not parked means not acked: the record stays in the source queue.
        telemetry.count(METRIC.parkFailures);
        telemetry.logger.error("could not park a record in the DLQ", {
          messageId: record.messageId,
          error: parkError,
        });
        return { kind: "retry", delaySeconds: fullJitterDelaySeconds(attempt, backoff), error: parkError };
      }
      telemetry.count(METRIC.permanentFailures);
      telemetry.logger.warn("record parked in the dead-letter queue", {
        messageId: record.messageId,
        error: describeError(error),
        ...(telemetry.logPayloads ? { body: record.body } : {}),
      });
      return { kind: "done", why: "parked" };
    };

    const fail = async (record: SQSRecord, error: unknown): Promise<Outcome> => {
      const attempt = Number(record.attributes.ApproximateReceiveCount ?? 1);
      if (classifyError(error) === "permanent") return park(record, error);
      // The queue's own redrive would move it without context; on the last allowed receive we park it ourselves.
      const q = await queueOf(record.eventSourceARN);
      if (q?.maxReceiveCount !== undefined && attempt >= q.maxReceiveCount) return park(record, error);
      telemetry.count(
        error instanceof InProgressElsewhereError ? METRIC.inProgressElsewhere : METRIC.transientFailures,
      );
      telemetry.logger.warn("record failed; it will be retried", {
        messageId: record.messageId,
        attempt,
        error: describeError(error),
      });
      return { kind: "retry", delaySeconds: fullJitterDelaySeconds(attempt, backoff), error };
    };

    type Claim = ClaimResult | { status: "error"; error: unknown } | { status: "same-id-other-payload" };
    const leases = new Map<number, Lease>();
    /** Each lease's length when it was granted. */
    const grantedMs = new Map<number, number>();
    const aborts = new Map<number, AbortController>();

    const runOne = async (i: number, record: SQSRecord, envelope: Envelope<T>, claim: Claim | undefined) => {
      if (claim?.status === "error") return fail(record, claim.error);
      if (claim?.status === "same-id-other-payload") {
        return fail(
          record,
          new InProgressElsewhereError(
            `'${envelope.id}' came twice in this batch with different payloads; this one waits for the first`,
          ),
        );
      }
      if (claim?.status === "duplicate") {
        telemetry.count(METRIC.duplicates);
        return { kind: "done", why: "duplicate" } as const;
      }
      if (claim?.status === "in-progress") {
        // Come back when the other holder's lease ends, not after a blind backoff.
        const wait = Math.ceil((claim.leaseExpiresAtMs - Date.now()) / 1000) + 1;
        const outcome = await fail(
          record,
          new InProgressElsewhereError(`'${envelope.id}' is being processed by another invocation`),
        );
        return outcome.kind === "retry"
          ? { ...outcome, delaySeconds: Math.max(outcome.delaySeconds, wait) }
          : outcome;
      }
      let lease = leases.get(i);
      // A claim that waited long for a slot (and no heartbeat kept it) is renewed before the effect
      // starts; if it lapsed and another invocation took the key, this one must not run.
      if (dedup && lease) {
        lease = heartbeat?.leaseOf(record.messageId) ?? lease;
        const granted = grantedMs.get(i) ?? 0;
        if (lease.expiresAtMs - Date.now() < granted / 2) {
          try {
            lease = await dedup.renew(lease, granted);
            leases.set(i, lease);
            heartbeat?.setLease(record.messageId, lease);
          } catch (error) {
            heartbeat?.untrack(record.messageId);
            leases.delete(i);
            return fail(
              record,
              error instanceof LeaseLostError
                ? new InProgressElsewhereError(`'${envelope.id}' was claimed elsewhere while it waited`)
                : error,
            );
          }
        }
      }
      const signal = aborts.get(i)?.signal ?? new AbortController().signal;
      let result: unknown;
      try {
        result = await handler(envelope, { context, record, signal });
      } catch (error) {
        heartbeat?.untrack(record.messageId);
        if (dedup && lease) {
          leases.delete(i);
          await dedup.release(lease).catch((releaseError) =>
            telemetry.logger.warn("could not release the lease", {
              messageId: record.messageId,
              error: releaseError,
            }),
          );
        }
        return fail(record, error);
      }
      // The effect happened: from here on nothing may release the lease or fail the record.
      heartbeat?.untrack(record.messageId);
      if (dedup && lease) {
        leases.delete(i);
        const done = dedup.complete(lease, idempotency.resultToStore(result));
        // Not awaited here, so a slot is not held while the group fills; awaited before we answer.
        completions.push(
          done.catch((error) => {
            telemetry.count(error instanceof LeaseLostError ? METRIC.leasesLost : METRIC.transientFailures);
            telemetry.logger.error("effect applied but completion not recorded", {
              messageId: record.messageId,
              error: describeError(error),
            });
          }),
        );
      }
      telemetry.count(METRIC.processed);
      return { kind: "done", why: "processed" } as const;
    };

    try {
      // 1. Normalise; bad input is parked right away. 2. Drop in-batch duplicates before any claim.
      const envelopes: (Envelope<T> | undefined)[] = await Promise.all(
        records.map((record, i) =>
          toSqsEnvelope(record, options).catch(async (error) => {
            outcomes[i] = await park(record, error);
            return undefined;
          }),
        ),
      );
      const firstOfId = new Map<string, number>();
      const sameIdOtherPayload = new Set<number>();
      envelopes.forEach((envelope, i) => {
        if (!envelope) return;
        if (envelope.idSource === "broker") telemetry.count(METRIC.brokerIdFallback);
        const first = firstOfId.get(envelope.id);
        if (first === undefined) firstOfId.set(envelope.id, i);
        else if (envelopes[first]?.raw === envelope.raw) {
          // A copy stays processed, in the queue, or parked whatever happens to the first, so this one can go.
          outcomes[i] = { kind: "done", why: "duplicate" };
          telemetry.count(METRIC.inBatchDuplicates);
        } else {
          // Same id, other payload: a duplicate or a key reuse, which only the store can tell once
          // the first is done. So it comes back in a later delivery instead of being dropped here.
          sameIdOtherPayload.add(i);
        }
      });
      const fifo = records.length > 0 && parseQueueArn(records[0]!.eventSourceARN).fifo;
      if (fifo) {
        // Bad input that could not be parked stays in its group, so the group's later records wait too.
        const blocked = new Set<string>();
        records.forEach((record, i) => {
          const group = record.attributes.MessageGroupId ?? "";
          if (outcomes[i]?.kind === "retry") blocked.add(group);
          else if (!outcomes[i] && blocked.has(group))
            outcomes[i] = { kind: "retry", delaySeconds: 0, error: "an earlier record of its group failed" };
        });
      }
      const todo = records
        .map((record, i) => ({ record, envelope: envelopes[i], i }))
        .filter((t) => !outcomes[t.i]);

      // 3. Claim every remaining key at once (new keys go out 25 to a request) and start each record
      //    as soon as its own claim lands. The heartbeat keeps every unfinished record invisible, and
      //    its lease alive, until the record finishes.
      if (records.length > 0) await startHeartbeat(records[0]!.eventSourceARN);
      const claims: Promise<Claim | undefined>[] = todo.map((t) => {
        const abort = new AbortController();
        aborts.set(t.i, abort);
        const id = t.record.messageId;
        if (sameIdOtherPayload.has(t.i)) return Promise.resolve({ status: "same-id-other-payload" } as const);
        heartbeat?.track(id, t.record.receiptHandle, undefined, () =>
          abort.abort(new LeaseLostError("lease lost")),
        );
        if (!dedup) return Promise.resolve(undefined);
        return dedup.claim(t.envelope!.id, { payloadHash: idempotency.payloadHashOf(t.envelope!) }).then(
          (claim): Claim => {
            if (claim.status === "claimed") {
              leases.set(t.i, claim.lease);
              grantedMs.set(t.i, claim.lease.expiresAtMs - Date.now());
              heartbeat?.setLease(id, claim.lease);
            } else heartbeat?.untrack(id);
            return claim;
          },
          (error): Claim => {
            heartbeat?.untrack(id);
            return { status: "error", error };
          },
        );
      });

      const results = await runKeyed(
        todo.map((t, j) => ({
          key: fifo ? (t.record.attributes.MessageGroupId ?? "") : undefined,
          run: async () => {
            const outcome = await runOne(t.i, t.record, t.envelope!, await claims[j]);
            outcomes[t.i] = outcome;
            // In a FIFO group a failure must stop the group's later records.
            if (outcome.kind === "retry") throw outcome.error;
            return outcome;
          },
        })),
        {
          concurrency: options.concurrency ?? 50,
          canStart: () => context.getRemainingTimeInMillis() > margin,
        },
      );
      results.forEach((r, j) => {
        const i = todo[j]!.i;
        if (r.status === "skipped") {
          if (r.reason === "out-of-time") telemetry.count(METRIC.outOfTime);
          outcomes[i] = { kind: "retry", delaySeconds: 0, error: r.reason };
        } else if (r.status === "rejected" && !outcomes[i]) {
          outcomes[i] = { kind: "retry", delaySeconds: 0, error: r.reason };
        }
      });
      // Records that never started (time ran out, or an earlier record of their FIFO group failed)
      // give their claims back, so their redelivery can run at once.
      await Promise.all(claims);
      await Promise.all(
        [...leases].map(([i, lease]) =>
          dedup?.release(lease).catch((error) =>
            telemetry.logger.warn("could not release the lease", {
              messageId: records[i]?.messageId,
              error,
            }),
          ),
        ),
      );
      await Promise.all(completions);
      await dedup?.flush();
    } catch (error) {
      // Outside record processing: fail only what did not finish.
      telemetry.logger.error("batch processing failed outside a record", { error });
      await Promise.allSettled(completions);
      await dedup?.flush().catch(() => undefined);
    } finally {
      // Before the retry visibilities below: an extension landing after them would undo the backoff.
      await heartbeat?.stop();
    }

    const failures: SQSBatchItemFailure[] = [];
    const changes = new Map<string, VisibilityChange[]>();
    records.forEach((record, i) => {
      const outcome = outcomes[i];
      if (outcome?.kind === "done") return;
      failures.push({ itemIdentifier: record.messageId });
      const delay = outcome?.kind === "retry" ? outcome.delaySeconds : 0;
      const list = changes.get(record.eventSourceARN) ?? [];
      list.push({ id: record.messageId, receiptHandle: record.receiptHandle, seconds: delay });
      changes.set(record.eventSourceARN, list);
    });
    // Space retries out by backoff instead of the queue's fixed visibility timeout.
    await Promise.all(
      [...changes].map(async ([arn, list]) => {
        const q = await queueOf(arn);
        if (!q) return;
        const failed = await changeVisibility(sqs, q.url, list);
        if (failed.length > 0)
          telemetry.logger.warn("could not set retry visibility", { messageIds: failed });
      }),
    );
    telemetry.count(METRIC.batchDurationMs, Date.now() - started);
    return { batchItemFailures: failures };
  };
}
