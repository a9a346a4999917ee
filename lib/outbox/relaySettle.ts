/**
 * The relay's settle stage: from the parse and the publish outcomes, what to park (what can never be
 * published) and what to clear; the parking itself (a failed parking fails its record: nothing is
 * acked); and the invocation's report as metrics.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { describeError } from "../core/errors.ts";
import { METRIC, type Telemetry } from "../observability/telemetry.ts";
import type { PublishOutcome } from "./publisher.ts";
import type { EventParsed, RelayBatch } from "./relayBatch.ts";
import { OUTBOX_ATTR as A } from "./schema.ts";
import { type ParkInput, type ParkingOptions, park } from "./settle.ts";

/** What one relay invocation published, parked and left for a retry. */
export interface RelayReport {
  /** Events published. */
  readonly published: number;
  /** Events parked: they can never be published as they are. */
  readonly parked: number;
  /** Events whose publish or parking failed: retried from the stream. */
  readonly failed: number;
  /** Stream records that are not INSERTs of pending outbox events, ignored. */
  readonly skipped: number;
  /** Left pending, acked: an older event of their aggregate is still waiting (the sweeper publishes them). */
  readonly deferred: number;
  /** Published events whose `pending` marker could not be cleared (the sweeper republishes them). */
  readonly markFailures: number;
  /** Predecessors read from the table (where the order was in doubt); the other events needed none. */
  readonly orderReads: number;
}

interface Parking {
  readonly index: number;
  readonly input: ParkInput;
}

/** What to park and what to clear; a failed publish fails its record (retried). */
export function sortOutcomes(
  b: RelayBatch,
  eventIdx: ReadonlyArray<number>,
  outcomes: PublishOutcome[],
  consumer: string,
  telemetry: Telemetry | undefined,
) {
  const source = (i: number) => b.records[i]?.eventSourceARN ?? "stream";
  const toPark: Parking[] = [];
  b.parsed.forEach((p, i) => {
    if (p.kind === "park") {
      const input = { key: p.key, image: p.image, eventId: undefined, error: p.error, source: source(i) };
      toPark.push({ index: i, input: { ...input, consumer } });
    }
  });
  const toClear: Record<string, AttributeValue>[] = [];
  const clearIdx: number[] = [];
  outcomes.forEach((o, n) => {
    const index = eventIdx[n]!;
    const p = b.parsed[index] as EventParsed;
    if (o.status === "published") {
      toClear.push(p.image);
      clearIdx.push(index);
    } else if (o.status === "failed") {
      b.failedAt.add(index);
      telemetry?.logger.warn("outbox publish failed; will retry", {
        eventId: p.event.eventId,
        destination: p.event.destination,
        error: describeError(o.error),
      });
    } else {
      const key = { pk: p.image[A.pk]!.S!, sk: p.image[A.sk]!.S! };
      const image = b.records[index]?.dynamodb?.NewImage;
      toPark.push({
        index,
        input: { key, image, eventId: p.event.eventId, error: o.error, source: source(index), consumer },
      });
    }
  });
  return { toPark, toClear, clearIdx };
}

/** Parks each event; a failed parking fails its record (nothing is acked). Returns how many were parked. */
export async function parkAll(
  b: RelayBatch,
  toPark: ReadonlyArray<Parking>,
  parking: ParkingOptions,
  telemetry: Telemetry | undefined,
): Promise<number> {
  let parked = 0;
  await Promise.all(
    toPark.map(async ({ index, input }) => {
      try {
        await park(input, parking);
        parked++;
        telemetry?.logger.error("outbox event parked", {
          eventId: input.eventId,
          sequenceNumber: b.records[index]?.dynamodb?.SequenceNumber,
          error: describeError(input.error),
        });
      } catch (error) {
        b.failedAt.add(index);
        telemetry?.logger.error("parking an outbox event failed; will retry", {
          eventId: input.eventId,
          error: describeError(error),
        });
      }
    }),
  );
  return parked;
}

/** The report's counts as EMF metrics. */
export function countReport(report: RelayReport, telemetry: Telemetry | undefined): void {
  if (!telemetry) return;
  if (report.published) telemetry.count(METRIC.published, report.published);
  if (report.parked) telemetry.count(METRIC.outboxParked, report.parked);
  if (report.failed) telemetry.count(METRIC.outboxPublishFailures, report.failed);
  if (report.skipped) telemetry.count(METRIC.outboxRelaySkipped, report.skipped);
  if (report.deferred) telemetry.count(METRIC.outboxDeferred, report.deferred);
  if (report.markFailures) telemetry.count(METRIC.outboxMarkFailures, report.markFailures);
}
