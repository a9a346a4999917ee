import { setTimeout as sleepMs } from "node:timers/promises";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Context } from "aws-lambda";
import {
  classifyError,
  describeError,
  InProgressElsewhereError,
  LeaseLostError,
  TransientError,
} from "../core/errors.ts";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import { runKeyed } from "../core/keyedScheduler.ts";
import type { DedupStore, Lease } from "../dedup/dedupStore.ts";
import { createIdempotency, type IdempotencyOptions, type IdempotencySetting } from "../dedup/idempotency.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import { type KafkaEnvelope, type KafkaEnvelopeOptions, toKafkaEnvelope } from "./kafkaEnvelope.ts";
import { type KafkaRecordView, readKafkaEvent } from "./mskEvent.ts";
import { type KafkaBatchResponse, kafkaBatchResponse } from "./partialResponse.ts";
import type { KafkaProducer, OutgoingMessage } from "./producer.ts";
import {
  createRetryLadder,
  dueDecision,
  type RetryLadder,
  type Route,
  routeFailure,
  topicRole,
} from "./retryLadder.ts";
import { KeyOnRetryPathError, routedMessage } from "./routedMessage.ts";
import { usesNoAttempt } from "./schemas/errors.ts";

/** The same settings as the SQS consumer's; `true` for `payloadHash` hashes the raw value. */
export type KafkaIdempotencyOptions = IdempotencyOptions;

export interface KafkaRecordContext {
  readonly context: Context;
  readonly record: KafkaRecordView;
  /** Aborted when this record's dedup lease is lost to another consumer; stop side effects then. */
  readonly signal: AbortSignal;
}

export type KafkaRecordHandler<T> = (
  envelope: KafkaEnvelope<T>,
  ctx: KafkaRecordContext,
) => Promise<unknown> | unknown;

export interface KafkaConsumerOptions<T> extends KafkaEnvelopeOptions<T> {
  /** The consuming service: the `x-consumer` header and the default dedup scope. @default the function name */
  readonly consumer?: string;
  /**
   * Dedup on DynamoDB; `tableName` defaults to DEDUP_TABLE_NAME and `scope` to `consumer`.
   * Pass a DedupStore to share one, or `false` for handlers that are idempotent by nature.
   */
  readonly idempotency?: IdempotencySetting;
  /**
   * `partition`: each partition in offset order, partitions side by side.
   * `key`: inside a partition, different Kafka keys run side by side; each key stays in order.
   * @default "partition"
   */
  readonly ordering?: "partition" | "key";
  /** Records in flight at once (partitions, or keys with `ordering: "key"`). @default 10 */
  readonly concurrency?: number;
  /**
   * `retry-topics`: a failed record goes up the retry ladder (or to the DLQ) and its partition moves on.
   * `partial-batch`: a transient failure is reported to Lambda, which redelivers the partition from
   * there (it blocks the partition); permanent failures still go to the dead-letter topic.
   * @default "retry-topics"
   */
  readonly failureMode?: "retry-topics" | "partial-batch";
  /** The ladder. @default delays 5s, 1m, 10m; topics `<topic>.retry.<delay>`, `<topic>.DLQ` */
  readonly retry?: RetryLadder | Parameters<typeof createRetryLadder>[0];
  /**
   * Once a key has a record on the retry path, its later records in the batch follow it there
   * instead of overtaking it. (A record that goes to the DLQ does not drag its key along.)
   * @default true
   */
  readonly keyOrder?: boolean;
  /**
   * The mapping has `ReportBatchItemFailures`. When `false`, a batch with unfinished records throws
   * instead (Lambda retries it whole; finished records are then skipped as duplicates).
   * @default true
   */
  readonly reportBatchItemFailures?: boolean;
  /**
   * Claim the dedup keys of the whole batch up front, in a few grouped requests, instead of one
   * claim per record on the record's critical path. A claim that has aged past half its lease by the
   * time its record starts is renewed (fenced) first, so a stale claim is never acted on; claims of
   * records that did not run are released before the batch ends. Records of retry topics are always
   * claimed just in time (they may wait to come due). @default true
   */
  readonly claimAhead?: boolean;
  /** Stop starting records (and waiting for due retries) when less Lambda time than this remains. @default 5000 ms */
  readonly timeMarginMs?: number;
  /** Longest single wait for a retry record to come due. @default no cap besides the Lambda time */
  readonly maxDueWaitMs?: number;
  readonly producer: KafkaProducer;
  readonly dynamodbClient: DynamoDBClient;
  readonly telemetry: Telemetry;
  /** Injectable clock and sleep (tests). */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Thrown for the whole batch when records are unfinished and partial responses are off. */
export class KafkaBatchIncompleteError extends TransientError {}

type Why = "failed" | "not-due" | "out-of-time" | "key-failed" | "park-failed" | "lease-lost";

type Outcome =
  | { readonly kind: "processed" | "duplicate" }
  | { readonly kind: "routed"; readonly route: Route }
  | { readonly kind: "unfinished"; readonly why: Why };

/** Internal: a record leaves the batch unfinished (and stops its lane). */
class Unfinished extends Error {
  readonly why: Why;
  constructor(why: Why) {
    super(why);
    this.why = why;
  }
}

function rawHeader(view: KafkaRecordView, name: string): string | undefined {
  for (let i = view.headers.length - 1; i >= 0; i--) {
    if (view.headers[i]!.name === name) return view.headers[i]!.value.toString("utf8");
  }
  return undefined;
}

function previousRetryCount(view: KafkaRecordView): number {
  const n = Number(rawHeader(view, CONTEXT_HEADERS.retryCount) ?? 0);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** Creates the per-container state (dedup stores, ladder) once; returns the per-batch function. */
export function createKafkaBatchProcessor<T>(
  handler: KafkaRecordHandler<T>,
  options: KafkaConsumerOptions<T>,
) {
  const { telemetry, producer } = options;
  const { logger } = telemetry;
  const ladder: RetryLadder =
    options.retry && "delaysMs" in options.retry ? options.retry : createRetryLadder(options.retry ?? {});
  const mode = options.failureMode ?? "retry-topics";
  const ordering = options.ordering ?? "partition";
  const keyOrder = options.keyOrder ?? true;
  const margin = options.timeMarginMs ?? 5000;
  const concurrency = options.concurrency ?? 10;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => sleepMs(ms));
  const idempotency = createIdempotency(options.idempotency, options.dynamodbClient);

  const claimedAt = new WeakMap<Lease, number>();
  /** Half the lease's length, measured from when we first saw it. */
  const leaseHalf = (lease: Lease): number => {
    const seen = claimedAt.get(lease) ?? now();
    return (lease.expiresAtMs - seen) / 2;
  };

  /** Renews a long record's lease at a third of its length; aborts `signal` if it is lost. */
  function keepLease(dedup: DedupStore, lease: Lease, abort: AbortController): () => void {
    const length = Math.max(1000, lease.expiresAtMs - now());
    let current = lease;
    const timer = setInterval(() => {
      dedup.renew(current).then(
        (renewed) => {
          current = renewed;
        },
        (error: unknown) => {
          if (error instanceof LeaseLostError) {
            telemetry.count(METRIC.leasesLost);
            abort.abort(error);
            clearInterval(timer);
          }
        },
      );
    }, length / 3);
    timer.unref();
    return () => clearInterval(timer);
  }

  return async function processBatch(event: unknown, context: Context): Promise<KafkaBatchResponse> {
    const started = now();
    const views = readKafkaEvent(event);
    const consumer = options.consumer ?? context.functionName;
    const dedup = idempotency.storeFor(consumer);
    const remaining = () =>
      typeof context.getRemainingTimeInMillis === "function"
        ? context.getRemainingTimeInMillis()
        : Number.POSITIVE_INFINITY;

    // Read every record first: typed errors for bad input, and duplicates inside the batch found in
    // memory (a second claim of one key in one batch would only collide with ourselves).
    const envelopes = await Promise.all(
      views.map((v) =>
        toKafkaEnvelope(v, options).then(
          (envelope) => ({ ok: true as const, envelope }),
          (error: unknown) => ({ ok: false as const, error }),
        ),
      ),
    );
    const firstById = new Map<string, number>();
    // Same id, other payload: a duplicate or a key reuse, which only the store can tell once the
    // first is done; so that record takes the retry path instead of being dropped as a duplicate.
    const otherPayload = new Set<number>();
    const duplicateOf: (number | undefined)[] = envelopes.map((p, i) => {
      if (!p.ok) return undefined;
      const first = firstById.get(p.envelope.id);
      if (first === undefined) firstById.set(p.envelope.id, i);
      else if (envelopes[first]?.ok && envelopes[first].envelope.raw !== p.envelope.raw) {
        otherPayload.add(i);
        return undefined;
      }
      return first;
    });

    // Claim ahead: every main-topic record's key at once; the store coalesces them into few requests.
    type Claim = Awaited<ReturnType<DedupStore["claim"]>>;
    const preClaims = new Map<number, Promise<{ ok: true; claim: Claim } | { ok: false; error: unknown }>>();
    if (dedup && (options.claimAhead ?? true)) {
      envelopes.forEach((p, i) => {
        if (
          !p.ok ||
          duplicateOf[i] !== undefined ||
          otherPayload.has(i) ||
          topicRole(ladder, views[i]!.topic).kind === "retry"
        )
          return;
        const payloadHash = idempotency.payloadHashOf(p.envelope);
        preClaims.set(
          i,
          dedup.claim(p.envelope.id, payloadHash ? { payloadHash } : {}).then(
            (claim) => {
              if (claim.status === "claimed") claimedAt.set(claim.lease, now());
              return { ok: true as const, claim };
            },
            (error: unknown) => ({ ok: false as const, error }),
          ),
        );
      });
    }
    const usedClaims = new Set<number>();

    const routes: { index: number; topic: string; message: OutgoingMessage }[] = [];
    const completions: { index: number; done: Promise<void> }[] = [];
    const onRetryPath = new Map<string, Route>();
    const keyLane = (v: KafkaRecordView) =>
      v.keyBytes === null ? undefined : `${v.partitionKey}|${v.keyBytes.toString("base64")}`;

    const log = (message: string, view: KafkaRecordView, extra: Record<string, unknown> = {}) =>
      logger.warn(message, {
        consumer,
        topic: view.topic,
        partition: view.partition,
        offset: view.offset,
        ...extra,
      });

    const addRoute = (
      index: number,
      route: Route,
      error: unknown,
      messageId: string | undefined,
    ): Outcome => {
      const message = routedMessage({
        record: views[index]!,
        route,
        error,
        messageId,
        consumer,
        now: new Date(now()),
      });
      routes.push({ index, topic: route.topic, message });
      return { kind: "routed", route };
    };

    const fail = (index: number, error: unknown, messageId: string | undefined): Outcome => {
      const view = views[index]!;
      const kind = classifyError(error);
      telemetry.count(kind === "permanent" ? METRIC.permanentFailures : METRIC.transientFailures);
      if (error instanceof InProgressElsewhereError) telemetry.count(METRIC.inProgressElsewhere);
      log("record failed", view, { id: messageId, kind, error: describeError(error) });
      const baseTopic =
        rawHeader(view, CONTEXT_HEADERS.originalTopic) ?? topicRole(ladder, view.topic).baseTopic;
      if (mode === "partial-batch" && kind === "transient") throw new Unfinished("failed");
      const route = routeFailure({
        ladder,
        baseTopic,
        previousRetryCount: previousRetryCount(view),
        // A contended key, or a schema registry that cannot answer, says nothing about the record:
        // it goes round the ladder again without using up an attempt (never dead-lettered for that).
        errorKind: error instanceof InProgressElsewhereError || usesNoAttempt(error) ? "contended" : kind,
      });
      if (mode === "partial-batch" && route.kind === "retry") throw new Unfinished("failed");
      const lane = keyLane(view);
      if (route.kind === "retry" && keyOrder && lane) onRetryPath.set(lane, route);
      return addRoute(index, route, error, messageId);
    };

    const runOne = async (index: number): Promise<Outcome> => {
      const view = views[index]!;
      const parsed = envelopes[index]!;
      const lane = keyLane(view);
      const leader = mode === "retry-topics" && keyOrder && lane ? onRetryPath.get(lane) : undefined;
      if (leader && leader.kind === "retry") {
        telemetry.count(METRIC.kafkaFollowedKey);
        const error = new KeyOnRetryPathError(
          `an earlier record of this key is on the retry path (${leader.topic}); following it to keep key order`,
        );
        return addRoute(index, { ...leader }, error, parsed.ok ? parsed.envelope.id : undefined);
      }
      if (!parsed.ok) return fail(index, parsed.error, undefined);
      const envelope = parsed.envelope;
      if (envelope.tombstone && options.tombstones === "skip") return { kind: "processed" };
      if (duplicateOf[index] !== undefined) {
        telemetry.count(METRIC.inBatchDuplicates);
        return { kind: "duplicate" };
      }
      if (otherPayload.has(index)) {
        return fail(
          index,
          new InProgressElsewhereError(
            `'${envelope.id}' came twice in this batch with different payloads; this one waits for the first`,
          ),
          envelope.id,
        );
      }
      const role = topicRole(ladder, view.topic);
      if (role.kind === "retry") {
        const due = dueDecision({
          recordTimestampMs: view.timestamp,
          delayMs: role.delayMs,
          nowMs: now(),
          remainingMs: remaining(),
          reserveMs: margin,
          ...(options.maxDueWaitMs !== undefined ? { maxWaitMs: options.maxDueWaitMs } : {}),
        });
        if (due.kind === "not-yet") {
          telemetry.count(METRIC.kafkaNotYetDue);
          throw new Unfinished("not-due");
        }
        if (due.kind === "wait") await sleep(due.waitMs);
      }
      if (envelope.idSource === "broker") telemetry.count(METRIC.brokerIdFallback);

      let lease: Lease | undefined;
      if (dedup) {
        let claim: Claim;
        try {
          const pre = preClaims.get(index);
          usedClaims.add(index);
          if (pre) {
            const settledClaim = await pre;
            if (!settledClaim.ok) throw settledClaim.error;
            claim = settledClaim.claim;
            // An aged claim is renewed first; LeaseLostError means someone took the key meanwhile.
            if (claim.status === "claimed" && claim.lease.expiresAtMs - now() < leaseHalf(claim.lease)) {
              claim = { status: "claimed", lease: await dedup.renew(claim.lease) };
            }
          } else {
            const payloadHash = idempotency.payloadHashOf(envelope);
            claim = await dedup.claim(envelope.id, payloadHash ? { payloadHash } : {});
          }
        } catch (error) {
          if (error instanceof LeaseLostError) {
            return fail(
              index,
              new InProgressElsewhereError(`'${envelope.id}' was claimed elsewhere`),
              envelope.id,
            );
          }
          return fail(index, error, envelope.id);
        }
        if (claim.status === "duplicate") {
          telemetry.count(METRIC.duplicates);
          return { kind: "duplicate" };
        }
        if (claim.status === "in-progress") {
          return fail(
            index,
            new InProgressElsewhereError(`'${envelope.id}' is being processed elsewhere`),
            envelope.id,
          );
        }
        lease = claim.lease;
      }

      const abort = new AbortController();
      const stopKeeping = dedup && lease ? keepLease(dedup, lease, abort) : () => {};
      try {
        await handler(envelope, { context, record: view, signal: abort.signal });
      } catch (error) {
        stopKeeping();
        if (dedup && lease) {
          // Free the key at once, so the retry copy (or a redelivery) can claim it.
          await dedup
            .release(lease)
            .catch((releaseError: unknown) =>
              log("could not release the dedup lease", view, { error: describeError(releaseError) }),
            );
        }
        return fail(index, error, envelope.id);
      }
      stopKeeping();
      if (dedup && lease) completions.push({ index, done: dedup.complete(lease) });
      telemetry.count(METRIC.processed);
      return { kind: "processed" };
    };

    const settled = await runKeyed(
      views.map((v, index) => ({
        key:
          ordering === "key" ? `${v.partitionKey}|${v.keyBytes?.toString("base64") ?? "∅"}` : v.partitionKey,
        run: () => runOne(index),
      })),
      { concurrency, stopKeyOnFailure: true, canStart: () => remaining() > margin },
    );
    // Claims taken ahead for records that never reached their handler (skipped, routed as followers,
    // not due, out of time) are released, so a retry copy or redelivery can claim them at once.
    if (dedup && preClaims.size > 0) {
      await Promise.all(
        [...preClaims].map(async ([i, pre]) => {
          if (usedClaims.has(i)) return;
          const r = await pre;
          if (r.ok && r.claim.status === "claimed") {
            await dedup
              .release(r.claim.lease)
              .catch((error: unknown) =>
                log("could not release an unused dedup claim", views[i]!, { error: describeError(error) }),
              );
          }
        }),
      );
    }
    const outcomes: Outcome[] = settled.map((s, i) => {
      if (s.status === "fulfilled") return s.value;
      if (s.status === "skipped") {
        if (s.reason === "out-of-time") telemetry.count(METRIC.outOfTime);
        return { kind: "unfinished", why: s.reason };
      }
      if (s.reason instanceof Unfinished) return { kind: "unfinished", why: s.reason.why };
      // A bug in our own code path: never ack the record.
      log("unexpected error", views[i]!, { error: describeError(s.reason) });
      return { kind: "unfinished", why: "failed" };
    });

    // Completions are grouped into a few TransactWriteItems; wait for all of them before acking.
    if (dedup && completions.length > 0) {
      await dedup.flush();
      const results = await Promise.allSettled(completions.map((c) => c.done));
      results.forEach((r, k) => {
        if (r.status === "fulfilled") return;
        const index = completions[k]!.index;
        if (r.reason instanceof LeaseLostError) {
          // Someone took the key over: redelivered, the record meets their record, not ours.
          telemetry.count(METRIC.leasesLost);
          log("completion failed; the record will be redelivered", views[index]!, {
            error: describeError(r.reason),
          });
          outcomes[index] = { kind: "unfinished", why: "lease-lost" };
          return;
        }
        // The effect is applied and the key is still ours (throttling, a timeout): redelivering would
        // only meet our own lease and then run the effect again. Acked, like the SQS consumer does.
        telemetry.count(METRIC.transientFailures);
        log("effect applied but completion not recorded", views[index]!, { error: describeError(r.reason) });
      });
    }

    // Park everything routed in one produce request (order within each topic is batch order, so a
    // key's records keep their order on the retry topic). If it fails, nothing routed is acked.
    if (routes.length > 0) {
      const byTopic = new Map<string, OutgoingMessage[]>();
      for (const r of routes) {
        const list = byTopic.get(r.topic) ?? [];
        list.push(r.message);
        byTopic.set(r.topic, list);
      }
      try {
        await producer.sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
        for (const r of routes) {
          const o = outcomes[r.index];
          if (o?.kind === "routed")
            telemetry.count(o.route.kind === "retry" ? METRIC.retried : METRIC.deadLettered);
        }
      } catch (error) {
        telemetry.count(METRIC.parkFailures, routes.length);
        logger.error("could not produce to the retry / dead-letter topics; records will be redelivered", {
          consumer,
          topics: [...byTopic.keys()],
          records: routes.length,
          error: describeError(error),
        });
        for (const r of routes) outcomes[r.index] = { kind: "unfinished", why: "park-failed" };
      }
    }

    const unfinished = views.filter((_, i) => outcomes[i]!.kind === "unfinished");
    telemetry.count(METRIC.batchDurationMs, now() - started);
    if (unfinished.length > 0) telemetry.count(METRIC.kafkaReportedUnfinished, unfinished.length);
    const response = kafkaBatchResponse(unfinished);
    if (unfinished.length > 0 && options.reportBatchItemFailures === false) {
      throw new KafkaBatchIncompleteError(
        `${unfinished.length} of ${views.length} records are unfinished (${response.batchItemFailures
          .map((f) => `${f.itemIdentifier.partition}@${f.itemIdentifier.offset}`)
          .join(", ")}); failing the batch so Lambda retries it`,
      );
    }
    return response;
  };
}
