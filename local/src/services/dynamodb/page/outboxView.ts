/** Outbox: per table, the pending count and the oldest pending event's age, the parked events with their error, a requeue. */
import type { OutboxEventDto, OutboxTableDto } from "../../../console/consoleApi.ts";
import { get, post } from "../../../console/page/api.ts";
import { age, fill, h, route, table, time } from "../../../console/page/dom.ts";
import type { ViewFactory } from "../../../console/page/view.ts";

function parkedRows(t: OutboxTableDto, say: (s: string) => void, refresh: () => Promise<void>) {
  return t.parked.map((e) => [
    time(e.parkedAt),
    e.eventType,
    e.aggregate,
    e.destination,
    h("span", { class: "error" }, e.lastError ?? ""),
    h(
      "button",
      {
        testid: "requeue",
        onclick: async () => {
          try {
            const r = await post<{ requeued: boolean }>("/api/actions/requeue", {
              table: t.table,
              pk: e.pk,
              sk: e.sk,
            });
            say(
              r.requeued
                ? `${e.eventId} is pending again: the sweeper republishes it`
                : `${e.eventId} is gone`,
            );
            await refresh();
          } catch (error) {
            say(`requeue failed: ${(error as Error).message}`);
          }
        },
      },
      "Requeue",
    ),
  ]);
}

const eventRow = (e: OutboxEventDto) => [
  time(e.createdAt),
  h("a", { href: route("trace", e.eventId) }, e.eventId),
  e.eventType,
  e.aggregate,
  e.state,
  e.destination,
];

export const outboxView: ViewFactory = async (el) => {
  const body = h("div");
  const out = h("p", { class: "result", testid: "action-result" });
  const say = (s: string) => {
    out.textContent = s;
  };
  let drawn = "";
  const refresh = async () => {
    const tables = await get<OutboxTableDto[]>("/api/outbox");
    if (JSON.stringify(tables) === drawn) return;
    drawn = JSON.stringify(tables);
    fill(
      body,
      tables.length === 0 ? h("p", { class: "empty" }, "no table with the outbox's pending index") : null,
      tables.map((t) =>
        h(
          "section",
          { testid: `outbox-${t.table}` },
          h("h3", {}, t.table),
          h(
            "p",
            {},
            h("span", { testid: "pending" }, String(t.pending)),
            " pending",
            t.oldestPendingAgeMs !== undefined ? ` · oldest ${age(t.oldestPendingAgeMs)}` : "",
          ),
          h("h4", {}, `Parked (${t.parked.length})`),
          table(
            "parked",
            ["parked at", "type", "aggregate", "destination", "error", ""],
            parkedRows(t, say, refresh),
          ),
          h("h4", {}, "Latest events"),
          table(
            "events",
            ["created", "event id", "type", "aggregate", "state", "destination"],
            t.recent.map(eventRow),
          ),
        ),
      ),
    );
  };
  el.append(h("h2", {}, "Outbox"), out, body);
  await refresh();
  return { onEvent: (event) => void (event === "tick" && refresh().catch(() => undefined)) };
};
