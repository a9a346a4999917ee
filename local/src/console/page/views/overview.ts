/** Overview: the app's resources by kind, each linked to its view; what is not emulated and what is done instead. */
import type { ReportEntryDto, ResourceDto } from "../../consoleApi.ts";
import { h, table } from "../dom.ts";
import type { ViewFactory } from "../view.ts";

const KINDS: ReadonlyArray<[ResourceDto["kind"], string]> = [
  ["queue", "Queues"],
  ["table", "Tables"],
  ["topic", "Topics"],
  ["function", "Functions"],
  ["schedule", "Schedules"],
];

const name = (r: ResourceDto) => (r.link ? h("a", { href: r.link as `#${string}` }, r.name) : r.name);

function report(title: string, testid: string, entries: readonly ReportEntryDto[]) {
  return [
    h("h3", {}, `${title} (${entries.length})`),
    table(
      testid,
      ["resource", "type", "locally"],
      entries.map((e) => [e.logicalId, e.type, e.detail]),
    ),
  ];
}

export const overviewView: ViewFactory = (el, { overview: o }) => {
  el.append(h("h2", {}, o.mode === "app" ? `${o.stackName} on the local runtime` : "The emulators (no app)"));
  if (o.mode === "emulators")
    el.append(
      h(
        "p",
        { class: "note" },
        "Started by npm run emulators: queues, topics, outbox and dedup tables are read from the emulators; functions, denials and traces need reliable-consumers local.",
      ),
    );
  if (o.enforceIam !== undefined)
    el.append(
      h(
        "p",
        { class: "note" },
        o.enforceIam
          ? "IAM is enforced: each function acts as its role (see Denials)."
          : "IAM is not enforced (--no-enforce-iam).",
      ),
    );
  for (const [kind, title] of KINDS) {
    const rs = o.resources.filter((r) => r.kind === kind);
    if (rs.length)
      el.append(
        h("h3", {}, title),
        table(
          `resources-${kind}`,
          ["name", ""],
          rs.map((r) => [name(r), r.detail]),
        ),
      );
  }
  if (o.report) {
    el.append(...report("NOT EMULATED", "not-emulated", o.report.unsupported));
    if (o.report.refused?.length)
      el.append(...report("REFUSED, as AWS refuses it", "refused", o.report.refused));
    if (o.report.standIns?.length)
      el.append(...report("Stand-ins for imported resources", "stand-ins", o.report.standIns));
    el.append(...report("No local effect", "inert", o.report.inert));
    if (o.report.notes.length)
      el.append(
        h("h3", {}, "Notes"),
        h(
          "ul",
          { testid: "notes" },
          o.report.notes.map((n) => h("li", {}, n)),
        ),
      );
  }
  el.append(
    h("h3", {}, "Endpoints"),
    h(
      "pre",
      { testid: "endpoints" },
      Object.entries(o.endpoints)
        .map(([k, v]) => `export ${k}=${v}\n`)
        .join(""),
    ),
  );
  return {};
};
