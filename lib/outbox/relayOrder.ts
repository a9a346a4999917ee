/**
 * The relay's order stage (aggregateOrder.ts does the reading): each aggregate's events in their
 * own order; an event whose predecessor is still pending or parked is not published here, nor are
 * the later events of its aggregate. They stay pending and their records are acked, so the shard
 * moves on; the sweeper publishes them once everything older is out. A failed read fails them
 * (retried).
 */
import { describeError } from "../core/errors.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import type { AggregateChain, OrderCheck, OrderedEvent, PublishedSequences } from "./aggregateOrder.ts";
import { positionOf } from "./outboxEvent.ts";
import type { EventParsed, RelayBatch } from "./relayBatch.ts";
import { OUTBOX_ATTR as A } from "./schema.ts";

/** The events of the batch, and where each unparseable (to be parked) event of an aggregate stands. */
function orderInputs(b: RelayBatch) {
  const events: OrderedEvent<number>[] = [];
  const parks = new Map<string, Array<{ index: number; seq: number | undefined }>>();
  b.parsed.forEach((p, index) => {
    if (p.kind === "park" && p.key) {
      parks.set(p.key.pk, [...(parks.get(p.key.pk) ?? []), { index, seq: p.seq }]);
    }
    if (p.kind !== "event") return;
    const pk = p.image[A.pk]!.S!;
    events.push({ ref: index, pk, sk: p.image[A.sk]!.S!, position: positionOf(p.image) });
  });
  // Behind an event parked in this batch: after it in its aggregate's order (else in batch order).
  const behindPark = (e: OrderedEvent<number>) =>
    (parks.get(e.pk) ?? []).some((k) =>
      k.seq !== undefined && e.position ? e.position.seq > k.seq : e.ref > k.index,
    );
  return { events, behindPark };
}

/** The batch's events that may go now (`eventIdx`, in order), and what was held back or read. */
export async function relayOrderCheck(b: RelayBatch, check: OrderCheck, telemetry: Telemetry | undefined) {
  const { events, behindPark } = orderInputs(b);
  const chains = await check.chains(events);
  let deferred = 0;
  let orderReads = 0;
  const eventIdx: number[] = [];
  for (const chain of chains) {
    let stop: "deferred" | "failed" | undefined;
    chain.events.forEach((e, k) => {
      const gate = chain.gates[k]!;
      if (gate.kind === "clear" && gate.read) orderReads++;
      if (gate.kind === "waiting" || gate.kind === "unknown") orderReads++;
      const eventId = (b.parsed[e.ref] as EventParsed).event.eventId;
      if (!stop && gate.kind === "unknown") {
        stop = "failed";
        telemetry?.logger.warn("outbox order check failed; will retry", {
          eventId,
          error: describeError(gate.error),
        });
      } else if (!stop && (gate.kind === "waiting" || behindPark(e))) {
        stop = "deferred";
        telemetry?.logger.info("outbox event held: an older event of its aggregate is waiting", {
          eventId,
          blockedBy: gate.kind === "waiting" ? gate.blockingSk : "parked in this batch",
        });
      }
      if (stop === "failed") b.failedAt.add(e.ref);
      else if (stop === "deferred") deferred++;
      else eventIdx.push(e.ref);
    });
  }
  return { eventIdx, deferred, orderReads, chains };
}

/** After the clear: each aggregate's published prefix moves its cached sequence number on. */
export function rememberPublished(
  published: PublishedSequences | undefined,
  chains: ReadonlyArray<AggregateChain<number>>,
  clearedIdx: ReadonlySet<number>,
): void {
  if (!published) return;
  for (const chain of chains) {
    let last: number | undefined;
    for (const e of chain.events) {
      if (!clearedIdx.has(e.ref) || !e.position) break;
      last = e.position.seq;
    }
    if (last !== undefined) published.advance(chain.pk, last);
  }
}
