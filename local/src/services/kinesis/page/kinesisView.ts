/**
 * Kinesis: each stream's shards (parents, open or closed) and consumers, and each mapping's position
 * on every shard (last read, last done, iterator age) with the records it gave up on, whose
 * KinesisBatchInfo sits in its destination queue (linked to the Queues view).
 */
import type { KinesisMappingDto, KinesisStreamDto } from "../../../console/consoleApi.ts";
import { get } from "../../../console/page/api.ts";
import { fill, h, route, table } from "../../../console/page/dom.ts";
import type { ViewFactory } from "../../../console/page/view.ts";

const short = (seq: string | undefined) => (seq ? `…${seq.slice(-8)}` : "");

function mappingSection(m: KinesisMappingDto): HTMLElement {
  return h(
    "section",
    { testid: `kinesis-mapping-${m.logicalId}` },
    h(
      "h4",
      {},
      `${m.logicalId} → `,
      h("a", { href: route("functions", m.functionName) }, m.functionName),
      m.consumer ? ` (enhanced fan-out ${m.consumer})` : "",
      m.parallelizationFactor > 1 ? ` · parallelization ${m.parallelizationFactor}` : "",
    ),
    h(
      "p",
      {},
      `${m.batches} batches · ${m.functionErrors} function errors · ${m.discarded} records given up`,
      m.destinationQueue
        ? [
            " → ",
            h("a", { href: route("queues", m.destinationQueue), testid: "destination" }, m.destinationQueue),
          ]
        : null,
    ),
    table(
      "positions",
      ["shard", "last read", "last done", "buffered", "iterator age"],
      m.positions.map((p) => [
        p.shardId + (p.closed ? " (read to its end)" : ""),
        short(p.lastRead),
        short(p.lastDone),
        p.buffered,
        p.iteratorAgeMs === undefined ? "" : `${p.iteratorAgeMs} ms`,
      ]),
    ),
  );
}

function streamSection(s: KinesisStreamDto): HTMLElement {
  return h(
    "section",
    { testid: `stream-${s.name}` },
    h(
      "h3",
      {},
      s.name,
      s.mode ? ` · ${s.mode.toLowerCase()}` : "",
      s.retentionHours ? ` · ${s.retentionHours} h` : "",
    ),
    table(
      "shards",
      ["shard", "parents", "state", "first sequence number"],
      s.shards.map((sh) => [
        sh.shardId,
        sh.parentIds.join(", "),
        sh.open ? "open" : "closed",
        short(sh.startingSequenceNumber),
      ]),
    ),
    s.consumers.length ? h("p", {}, `consumers: ${s.consumers.join(", ")}`) : null,
    s.mappings.length ? s.mappings.map(mappingSection) : h("p", { class: "empty" }, "no mapping reads it"),
  );
}

export const kinesisView: ViewFactory = async (el) => {
  const body = h("div");
  let drawn = "";
  const refresh = async () => {
    const streams = await get<KinesisStreamDto[]>("/api/kinesis");
    if (JSON.stringify(streams) === drawn) return;
    drawn = JSON.stringify(streams);
    fill(
      body,
      streams.length === 0 ? h("p", { class: "empty" }, "no Kinesis streams") : streams.map(streamSection),
    );
  };
  el.append(h("h2", {}, "Kinesis"), body);
  await refresh();
  return { onEvent: (event) => void (event === "tick" && refresh().catch(() => undefined)) };
};
