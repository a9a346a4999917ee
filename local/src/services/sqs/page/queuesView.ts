/**
 * Queues: each queue and its DLQ, live counts and the oldest message's age; one queue's messages
 * peeked (fauxqs reads them without a receive), the failure context as fields; a DLQ's replay (one
 * message, a selection, or all that match an error type and an age, with a dry run) and purge.
 */
import type {
  MoveResultDto,
  PeekedMessageDto,
  QueueDetailDto,
  QueueSummaryDto,
} from "../../../console/consoleApi.ts";
import { get, post } from "../../../console/page/api.ts";
import { age, fill, h, route, table, time } from "../../../console/page/dom.ts";
import type { ViewFactory } from "../../../console/page/view.ts";
import { attributeTable, bodyBlock, contextFields } from "../../../console/page/views/message.ts";

const link = (name: string) => h("a", { href: route("queues", name) }, name);

function queueRows(queues: readonly QueueSummaryDto[]) {
  return queues.map((q) => [
    link(q.name),
    h("span", { testid: `visible-${q.name}` }, q.visible),
    q.inFlight,
    q.delayed,
    age(q.oldestAgeMs),
    q.deadLetterFor.length
      ? ["DLQ of ", q.deadLetterFor.map(link)]
      : q.deadLetterQueue
        ? ["→ ", link(q.deadLetterQueue)]
        : "",
    q.triggers.join(", "),
  ]);
}

export const queuesView: ViewFactory = async (el) => {
  const body = h("div");
  const draw = (qs: readonly QueueSummaryDto[]) =>
    fill(
      body,
      table(
        "queues",
        ["queue", "visible", "in flight", "delayed", "oldest", "redrive", "triggers"],
        queueRows(qs),
      ),
    );
  el.append(h("h2", {}, "Queues"), body);
  draw(await get<QueueSummaryDto[]>("/api/queues"));
  return { onEvent: (event, data) => event === "queues" && draw(data as QueueSummaryDto[]) };
};

function messageCard(m: PeekedMessageDto, selected: Set<string>, isDlq: boolean): HTMLElement {
  const traceId = m.context?.messageId ?? m.messageId;
  return h(
    "article",
    { class: "message", testid: "message" },
    h(
      "header",
      {},
      isDlq &&
        h("input", {
          type: "checkbox",
          testid: "select",
          checked: selected.has(m.messageId),
          onchange: (e) =>
            (e.target as HTMLInputElement).checked ? selected.add(m.messageId) : selected.delete(m.messageId),
        }),
      h("code", { testid: "message-id" }, m.messageId),
      ` ${m.state} · sent ${time(m.sentAt)} · received ${m.receiveCount}×${m.groupId ? ` · group ${m.groupId}` : ""} · `,
      h("a", { href: route("trace", traceId) }, "trace"),
    ),
    contextFields(m.context),
    m.attributes.length ? attributeTable("attributes", m.attributes) : null,
    bodyBlock("body", m.body),
  );
}

function resultLine(r: MoveResultDto): string {
  const where = Object.entries(r.byDestination)
    .map(([q, n]) => `${n} → ${q}`)
    .join(", ");
  return `${r.dryRun ? "dry run: would move" : "moved"} ${r.moved} of ${r.seen} seen${where ? ` (${where})` : ""}; skipped ${r.skipped}${r.noDestination ? ` (${r.noDestination} have no x-original-queue: choose a destination)` : ""}; failed ${r.failed}`;
}

/** The replay and purge controls of a DLQ (or any queue: purge only). */
function controls(detail: () => QueueDetailDto, selected: Set<string>, refresh: () => Promise<void>) {
  const out = h("p", { class: "result", testid: "action-result" });
  const errorType = h("select", { testid: "error-type" });
  const older = h("input", { type: "number", placeholder: "older than (s)", testid: "older-than" });
  const to = h("select", { testid: "destination" });
  const say = (text: string, error = false) => {
    out.className = error ? "result error" : "result";
    out.textContent = text;
  };
  const run = (what: string, f: () => Promise<string>) => async () => {
    say(`${what}…`);
    try {
      say(await f());
      await refresh();
    } catch (error) {
      say(`${what} failed: ${(error as Error).message}`, true);
    }
  };
  const redrive = (dryRun: boolean, ids?: string[]) =>
    post<MoveResultDto>("/api/actions/redrive", {
      queue: detail().queue.name,
      dryRun,
      ...(ids ? { ids } : {}),
      ...(errorType.value ? { errorTypes: [errorType.value] } : {}),
      ...(older.value ? { olderThanSeconds: Number(older.value) } : {}),
      ...(to.value ? { toQueue: to.value } : {}),
    }).then(resultLine);
  let armed = false;
  const purge = h(
    "button",
    {
      testid: "purge",
      onclick: run("purge", async () => {
        if (!armed) {
          armed = true;
          purge.textContent = "Confirm purge";
          return "press Confirm purge to delete every message of this queue";
        }
        armed = false;
        purge.textContent = "Purge";
        return `purged ${(await post<{ purged: string }>("/api/actions/purge", { queue: detail().queue.name })).purged}`;
      }),
    },
    "Purge",
  );
  const update = () => {
    const d = detail();
    const types = [...new Set(d.messages.map((m) => m.errorType))].sort();
    if (
      errorType.options.length !== types.length + 1 ||
      [...errorType.options].some((o, i) => i > 0 && o.value !== types[i - 1])
    )
      fill(
        errorType,
        h("option", { value: "" }, "any error type"),
        types.map((t) => h("option", { value: t }, t)),
      );
    if (to.options.length === 0)
      fill(
        to,
        h("option", { value: "" }, "each message's x-original-queue"),
        d.queue.deadLetterFor.map((q) => h("option", { value: q }, q)),
      );
  };
  const isDlq = () => detail().queue.deadLetterFor.length > 0;
  const box = h(
    "div",
    { class: "controls" },
    isDlq() && [
      h("span", {}, "Replay: "),
      errorType,
      older,
      to,
      h("button", { testid: "dry-run", onclick: run("dry run", () => redrive(true)) }, "Dry run"),
      h(
        "button",
        { testid: "replay-selected", onclick: run("replay", () => redrive(false, [...selected])) },
        "Replay selected",
      ),
      h(
        "button",
        { testid: "replay-matching", onclick: run("replay", () => redrive(false)) },
        "Replay all matching",
      ),
    ],
    purge,
    out,
  );
  update();
  return { box, update };
}

function counts(q: QueueSummaryDto): HTMLElement {
  return h(
    "p",
    { testid: "queue-counts" },
    h("span", { testid: "count-visible" }, String(q.visible)),
    " visible · ",
    h("span", { testid: "count-inflight" }, String(q.inFlight)),
    " in flight · ",
    h("span", { testid: "count-delayed" }, String(q.delayed)),
    " delayed",
    q.oldestAgeMs !== undefined ? ` · oldest ${age(q.oldestAgeMs)}` : "",
    q.deadLetterFor.length ? ` · DLQ of ${q.deadLetterFor.join(", ")}` : "",
    q.deadLetterQueue
      ? ` · dead-letters to ${q.deadLetterQueue} after ${q.maxReceiveCount ?? "?"} receives`
      : "",
  );
}

export const queueView: ViewFactory = async (el, { params }) => {
  const name = params[0]!;
  const selected = new Set<string>();
  let detail = await get<QueueDetailDto>(`/api/queues/${encodeURIComponent(name)}`);
  const head = h("div");
  const list = h("div", { testid: "messages" });
  let drawn = "";
  const refresh = async () => {
    detail = await get<QueueDetailDto>(`/api/queues/${encodeURIComponent(name)}`);
    // Only what changed is drawn again (a selection, a scroll position stay).
    if (JSON.stringify(detail) !== drawn) draw();
  };
  const ctl = controls(() => detail, selected, refresh);
  const draw = () => {
    drawn = JSON.stringify(detail);
    fill(head, counts(detail.queue));
    ctl.update();
    const isDlq = detail.queue.deadLetterFor.length > 0;
    fill(
      list,
      detail.peek === "unavailable"
        ? h(
            "p",
            { class: "note" },
            "This SQS cannot be peeked without receiving (only the embedded fauxqs can): counts only.",
          )
        : null,
      detail.messages.length
        ? detail.messages.map((m) => messageCard(m, selected, isDlq))
        : h("p", { class: "empty" }, "no messages"),
    );
  };
  el.append(h("h2", {}, name), head, ctl.box, list);
  draw();
  return { onEvent: (event) => void (event === "tick" && refresh().catch(() => undefined)) };
};
