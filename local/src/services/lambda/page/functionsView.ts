/**
 * Functions: invocations, errors, duration p50/p99 and the batch outcomes over time (charts, from
 * the EMF metrics and REPORT lines of each function's log), and its log stream, live, filtered by
 * level and by message id.
 */
import type {
  FunctionSeriesDto,
  FunctionSummaryDto,
  LogLevel,
  LogLineDto,
} from "../../../console/consoleApi.ts";
import { OUTCOMES } from "../../../console/consoleApi.ts";
import { get } from "../../../console/page/api.ts";
import { type Chart, type ChartSeries, lineChart } from "../../../console/page/charts.ts";
import { fill, h, route, table, time } from "../../../console/page/dom.ts";
import type { ViewFactory } from "../../../console/page/view.ts";

const OUTCOME_COLORS = ["#2e7d32", "#757575", "#ef6c00", "#c62828", "#1565c0", "#6a1b9a"];
const LEVELS: readonly (LogLevel | "")[] = [
  "",
  "ERROR",
  "WARN",
  "INFO",
  "DEBUG",
  "PLATFORM",
  "METRICS",
  "TEXT",
];
const MAX_SHOWN_LINES = 1_000;

function summaryRows(fs: readonly FunctionSummaryDto[]) {
  return fs.map((f) => [
    h("a", { href: route("functions", f.name) }, f.name),
    f.triggers.join(", "),
    h("span", { testid: `invocations-${f.name}` }, f.invocations),
    f.errors,
    f.p50Ms ?? "",
    f.p99Ms ?? "",
    OUTCOMES.filter((o) => f.outcomes[o] > 0)
      .map((o) => `${o} ${f.outcomes[o]}`)
      .join(" · "),
  ]);
}

export const functionsView: ViewFactory = async (el, { overview }) => {
  el.append(h("h2", {}, "Functions"));
  if (overview.mode !== "app") {
    el.append(h("p", { class: "note" }, "Functions need reliable-consumers local (a synthesized app)."));
    return {};
  }
  const body = h("div");
  const draw = (fs: readonly FunctionSummaryDto[]) =>
    fill(
      body,
      table(
        "functions",
        ["function", "triggers", "invocations", "errors", "p50 ms", "p99 ms", "outcomes"],
        summaryRows(fs),
      ),
    );
  el.append(body);
  draw(await get<FunctionSummaryDto[]>("/api/functions"));
  return { onEvent: (event, data) => event === "functions" && draw(data as FunctionSummaryDto[]) };
};

const chartSeries = (s: FunctionSeriesDto) => ({
  calls: [
    { label: "invocations", color: "#1565c0", values: s.invocations },
    { label: "errors", color: "#c62828", values: s.errors },
  ] satisfies ChartSeries[],
  duration: [
    { label: "p50", color: "#2e7d32", values: s.p50Ms },
    { label: "p99", color: "#ef6c00", values: s.p99Ms },
  ] satisfies ChartSeries[],
  outcomes: OUTCOMES.map((o, i) => ({ label: o, color: OUTCOME_COLORS[i]!, values: s.outcomes[o] })),
});

/** The log stream with its filters; `add` takes new lines. */
function logStream(initial: readonly LogLineDto[]) {
  const lines = [...initial];
  const level = h(
    "select",
    { testid: "log-level" },
    LEVELS.map((l) => h("option", { value: l }, l || "every level")),
  );
  const id = h("input", { type: "search", placeholder: "message id", testid: "log-message-id" });
  const out = h("pre", { class: "logs", testid: "log-lines" });
  const draw = () => {
    const shown = lines.filter(
      (l) => (!level.value || l.level === level.value) && (!id.value || l.text.includes(id.value)),
    );
    out.textContent = shown
      .slice(-MAX_SHOWN_LINES)
      .map((l) => `${time(l.at)} ${l.level.padEnd(8)} ${l.text}`)
      .join("\n");
  };
  level.addEventListener("change", draw);
  id.addEventListener("input", draw);
  draw();
  return {
    el: h("div", { class: "log-stream" }, h("div", { class: "controls" }, level, id), out),
    add(more: readonly LogLineDto[]) {
      // The live stream may repeat what the first load had.
      const last = lines[lines.length - 1]?.seq ?? 0;
      lines.push(...more.filter((l) => l.seq > last));
      if (lines.length > 5_000) lines.splice(0, lines.length - 5_000);
      draw();
    },
  };
}

export const functionView: ViewFactory = async (el, { params }) => {
  const name = params[0]!;
  const load = (query: Record<string, string> = {}) =>
    get<{ series: FunctionSeriesDto; logs: LogLineDto[] }>(
      `/api/functions/${encodeURIComponent(name)}`,
      query,
    );
  const first = await load();
  const s = chartSeries(first.series);
  const charts: Chart[] = [
    lineChart("Invocations and errors", "chart-invocations", first.series.at, s.calls),
    lineChart("Duration (ms)", "chart-duration", first.series.at, s.duration),
    lineChart("Batch outcomes (records)", "chart-outcomes", first.series.at, s.outcomes),
  ];
  const stream = logStream(first.logs);
  el.append(
    h("h2", {}, name),
    h(
      "div",
      { class: "charts" },
      charts.map((c) => c.el),
    ),
    h("h3", {}, "Log stream"),
    stream.el,
  );
  return {
    onEvent(event, data) {
      if (event === "logs") stream.add((data as LogLineDto[]).filter((l) => l.fn === name));
      if (event === "tick")
        void load({ logs: "0" }).then((next) => {
          const n = chartSeries(next.series);
          charts[0]!.update(next.series.at, n.calls);
          charts[1]!.update(next.series.at, n.duration);
          charts[2]!.update(next.series.at, n.outcomes);
        });
    },
    dispose: () => {
      for (const c of charts) c.dispose();
    },
  };
};
