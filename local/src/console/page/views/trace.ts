/** Trace: from a message id, every step it took (received, claimed, handler run, outbox event, published, consumed downstream, parked, replayed). */
import type { TraceDto } from "../../consoleApi.ts";
import { get } from "../api.ts";
import { fill, h, route, table, time } from "../dom.ts";
import type { ViewFactory } from "../view.ts";

export const traceView: ViewFactory = async (el, { params, overview }) => {
  const id = h("input", {
    testid: "trace-id",
    placeholder: "message id, producer id, business key or event id",
    value: params[0] ?? "",
  });
  const out = h("div", { testid: "trace" });
  let drawn = "";
  const draw = async () => {
    if (!id.value) return;
    const t = await get<TraceDto>("/api/trace", { id: id.value });
    if (JSON.stringify(t) === drawn) return;
    drawn = JSON.stringify(t);
    fill(
      out,
      h("p", { class: "note" }, `Followed: ${t.related.join(", ")}`),
      table(
        "trace-steps",
        ["time", "step", "where", "what"],
        t.steps.map((s) => [
          time(s.at),
          h("span", { class: `step step-${s.kind}`, testid: `step-${s.kind}` }, s.kind),
          s.fn ? h("a", { href: route("functions", s.fn) }, s.where) : s.where,
          s.detail,
        ]),
      ),
    );
  };
  el.append(
    h("h2", {}, "Trace of one message"),
    overview.mode !== "app"
      ? h("p", { class: "note" }, "Without an app only the queues and tables are searched.")
      : "",
    h(
      "form",
      {
        class: "controls",
        onsubmit: (e) => {
          e.preventDefault();
          location.hash = route("trace", id.value);
        },
      },
      id,
      h("button", { type: "submit" }, "Trace"),
    ),
    out,
  );
  await draw();
  return { onEvent: (event) => void (event === "tick" && draw().catch(() => undefined)) };
};
