/**
 * Kafka: per topic and rung of its retry ladder, partitions, end offsets and each group's lag; a
 * dead-letter topic's records with their context headers, and their replay (with a dry run).
 */
import type { KafkaDeadLetterDto, KafkaTopicDto, MoveResultDto } from "../../../console/consoleApi.ts";
import { get, post } from "../../../console/page/api.ts";
import { fill, h, route, table, time } from "../../../console/page/dom.ts";
import type { ViewFactory } from "../../../console/page/view.ts";
import { attributeTable, bodyBlock, contextFields } from "../../../console/page/views/message.ts";

function topicRows(topics: readonly KafkaTopicDto[]) {
  return topics.map((t) => [
    t.rung === "DLQ" ? h("a", { href: route("kafka", t.name) }, t.name) : t.name,
    h("span", { class: `rung rung-${t.rung.replace(/\W/g, "")}` }, t.rung),
    t.partitions.length,
    h("span", { testid: `end-${t.name}` }, t.partitions.map((p) => p.high).join(" · ")),
    h("span", { testid: `lag-${t.name}` }, t.groups.map((g) => `${g.groupId}: ${g.lag}`).join(", ")),
  ]);
}

export const kafkaView: ViewFactory = async (el) => {
  const body = h("div");
  let drawn = "";
  const refresh = async () => {
    const topics = await get<KafkaTopicDto[]>("/api/kafka");
    if (JSON.stringify(topics) === drawn) return;
    drawn = JSON.stringify(topics);
    const bases = [...new Set(topics.map((t) => t.base))];
    fill(
      body,
      topics.length === 0 ? h("p", { class: "empty" }, "no Kafka topics") : null,
      bases.map((b) =>
        h(
          "section",
          { testid: `ladder-${b}` },
          h("h3", {}, b),
          table(
            "topics",
            ["topic", "rung", "partitions", "end offsets", "lag by group"],
            topicRows(topics.filter((t) => t.base === b)),
          ),
        ),
      ),
    );
  };
  el.append(h("h2", {}, "Kafka"), body);
  await refresh();
  return { onEvent: (event) => void (event === "tick" && refresh().catch(() => undefined)) };
};

function letterCard(l: KafkaDeadLetterDto, selected: Set<string>): HTMLElement {
  return h(
    "article",
    { class: "message", testid: "letter" },
    h(
      "header",
      {},
      h("input", {
        type: "checkbox",
        testid: "select",
        checked: selected.has(l.id),
        onchange: (e) =>
          (e.target as HTMLInputElement).checked ? selected.add(l.id) : selected.delete(l.id),
      }),
      h("code", {}, l.id),
      ` ${l.errorType} · ${time(l.deadLetteredAt)} · written by ${l.writtenBy === "lambda" ? "Lambda's on-failure destination" : "the consumer"}`,
      l.context.messageId ? [" · ", h("a", { href: route("trace", l.context.messageId) }, "trace")] : null,
    ),
    contextFields(l.context),
    bodyBlock("key", l.key),
    bodyBlock("value", l.value),
    l.headers.length ? attributeTable("headers", l.headers) : null,
  );
}

export const kafkaLettersView: ViewFactory = async (el, { params }) => {
  const topic = params[0]!;
  const selected = new Set<string>();
  const list = h("div", { testid: "letters" });
  const out = h("p", { class: "result", testid: "action-result" });
  const errorType = h("input", { placeholder: "error type (any)", testid: "error-type" });
  let drawn = "";
  const refresh = async () => {
    const letters = await get<KafkaDeadLetterDto[]>(`/api/kafka/${encodeURIComponent(topic)}/letters`);
    if (JSON.stringify(letters) === drawn) return;
    drawn = JSON.stringify(letters);
    fill(
      list,
      h("p", { testid: "letter-count" }, `${letters.length} dead letters`),
      letters.map((l) => letterCard(l, selected)),
    );
  };
  const replay = (dryRun: boolean, ids?: string[]) => async () => {
    out.textContent = "replaying…";
    try {
      const r = await post<MoveResultDto & { ledger: string }>("/api/actions/replay", {
        topic,
        dryRun,
        ...(ids ? { ids } : {}),
        ...(errorType.value ? { errorTypes: [errorType.value] } : {}),
      });
      const where = Object.entries(r.byDestination)
        .map(([t, n]) => `${n} → ${t}`)
        .join(", ");
      out.textContent = `${dryRun ? "dry run: would replay" : "replayed"} ${r.moved} of ${r.seen}${where ? ` (${where})` : ""}; already replayed ${r.alreadyReplayed ?? 0}; ledger ${r.ledger}`;
      await refresh();
    } catch (error) {
      out.textContent = `replay failed: ${(error as Error).message}`;
    }
  };
  el.append(
    h("h2", {}, topic),
    h(
      "div",
      { class: "controls" },
      errorType,
      h("button", { testid: "dry-run", onclick: replay(true) }, "Dry run"),
      h(
        "button",
        { testid: "replay-selected", onclick: () => void replay(false, [...selected])() },
        "Replay selected",
      ),
      h("button", { testid: "replay-matching", onclick: replay(false) }, "Replay all matching"),
      out,
    ),
    list,
  );
  await refresh();
  return { onEvent: (event) => void (event === "tick" && refresh().catch(() => undefined)) };
};
