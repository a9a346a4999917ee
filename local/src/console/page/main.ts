/**
 * The console's page: a navigation, one view at a time chosen by the URL's hash (`#/queues/orders`),
 * and one live stream whose events go to the view on show. Built by esbuild into one script.
 */

import { dedupView } from "../../services/dynamodb/page/dedupView.ts";
import { outboxView } from "../../services/dynamodb/page/outboxView.ts";
import { denialsView } from "../../services/iam/page/denialsView.ts";
import { kafkaLettersView, kafkaView } from "../../services/kafka/page/kafkaView.ts";
import { kinesisView } from "../../services/kinesis/page/kinesisView.ts";
import { functionsView, functionView } from "../../services/lambda/page/functionsView.ts";
import { queuesView, queueView } from "../../services/sqs/page/queuesView.ts";
import type { OverviewDto } from "../consoleApi.ts";
import { get, type LiveListener, live } from "./api.ts";
import { fill, h, route } from "./dom.ts";
import type { View, ViewFactory } from "./view.ts";
import { overviewView } from "./views/overview.ts";
import { traceView } from "./views/trace.ts";

/** Route → view; a route's second part is the view's parameter (a queue, a function, a topic, an id). */
const VIEWS: Readonly<Record<string, { list: ViewFactory; one?: ViewFactory; title: string }>> = {
  "": { list: overviewView, title: "Overview" },
  queues: { list: queuesView, one: queueView, title: "Queues" },
  functions: { list: functionsView, one: functionView, title: "Functions" },
  outbox: { list: outboxView, title: "Outbox" },
  kafka: { list: kafkaView, one: kafkaLettersView, title: "Kafka" },
  kinesis: { list: kinesisView, title: "Kinesis" },
  dedup: { list: dedupView, title: "Dedup" },
  denials: { list: denialsView, title: "Denials" },
  trace: { list: traceView, one: traceView, title: "Trace" },
};

let current: View | undefined;
let generation = 0;

function shell(overview: OverviewDto) {
  const status = h("span", { class: "live off", testid: "live" }, "connecting");
  const nav = h(
    "nav",
    {},
    Object.entries(VIEWS).map(([key, v]) =>
      h("a", { href: key ? route(key) : "#/", testid: `nav-${key || "overview"}` }, v.title),
    ),
  );
  const main = h("main", { testid: "view" });
  const title = overview.stackName ? `${overview.stackName} · local` : "emulators";
  document.body.replaceChildren(
    h("header", {}, h("strong", {}, "reliable-consumers"), h("span", {}, title), status),
    nav,
    main,
  );
  return { status, nav, main };
}

async function show(main: HTMLElement, nav: HTMLElement, overview: OverviewDto): Promise<void> {
  const [key = "", ...params] = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const entry = VIEWS[key] ?? VIEWS[""]!;
  for (const a of nav.querySelectorAll("a"))
    a.classList.toggle("on", a.getAttribute("href") === (key ? route(key) : "#/"));
  current?.dispose?.();
  current = undefined;
  const mine = ++generation;
  const el = h("section", { class: `view view-${key || "overview"}` });
  fill(main, el);
  try {
    const view = await (params.length && entry.one ? entry.one : entry.list)(el, { overview, params });
    if (mine === generation) current = view;
    else view.dispose?.();
  } catch (error) {
    fill(el, h("p", { class: "error", testid: "view-error" }, String((error as Error).message)));
  }
}

async function start(): Promise<void> {
  const overview = await get<OverviewDto>("/api/overview");
  const { status, nav, main } = shell(overview);
  const dispatch: LiveListener = (event, data) => current?.onEvent?.(event, data);
  live(dispatch, (connected) => {
    status.className = connected ? "live on" : "live off";
    status.textContent = connected ? "● live" : "○ reconnecting";
  });
  window.addEventListener("hashchange", () => void show(main, nav, overview));
  await show(main, nav, overview);
}

void start();
