/** Dedup: look a key up (status, lease holder and expiry, attempts, TTL): why a message was skipped as a duplicate. */
import type { DedupRecordDto, DedupTableDto } from "../../../console/consoleApi.ts";
import { get } from "../../../console/page/api.ts";
import { age, fields, fill, h, time } from "../../../console/page/dom.ts";
import type { ViewFactory } from "../../../console/page/view.ts";

function recordView(r: DedupRecordDto | null, key: string): HTMLElement {
  if (!r)
    return h(
      "p",
      { testid: "dedup-record", class: "note" },
      `No record for ${key}: it was never claimed in this scope, or its TTL passed and DynamoDB removed it.`,
    );
  const now = Date.now();
  return fields("dedup-record", [
    ["key", r.pk],
    ["status", h("strong", { testid: "dedup-status" }, r.status ?? "")],
    ["lease token", r.leaseToken],
    ["lease holder", r.holder],
    [
      "lease expires",
      r.leaseExpiresAt !== undefined
        ? `${time(r.leaseExpiresAt)} (${r.leaseExpiresAt > now ? `in ${age(r.leaseExpiresAt - now)}` : `${age(now - r.leaseExpiresAt)} ago`})`
        : undefined,
    ],
    ["attempts", r.attempts],
    ["TTL (expiresAt)", r.expiresAt !== undefined ? time(r.expiresAt * 1000) : undefined],
    ["payload hash", r.payloadHash],
    ["stored result", r.hasResult ? "yes" : "no"],
    [
      "meaning",
      r.status === "COMPLETED"
        ? "done: a delivery with this key is a duplicate and is skipped"
        : r.status === "IN_PROGRESS"
          ? "claimed: another delivery waits until the lease expires"
          : undefined,
    ],
  ]);
}

export const dedupView: ViewFactory = async (el) => {
  const tables = await get<DedupTableDto[]>("/api/dedup");
  const table = h(
    "select",
    { testid: "dedup-table" },
    tables.map((t) => h("option", { value: t.table }, t.table)),
  );
  const scope = h("input", { testid: "dedup-scope", placeholder: "scope (consumer name)" });
  const scopes = h("datalist");
  scopes.id = "dedup-scopes";
  scope.setAttribute("list", scopes.id);
  const key = h("input", { testid: "dedup-key", placeholder: "key (business key or message id)" });
  const out = h("div");
  const sample = h("ul", { testid: "dedup-sample" });
  const pickScopes = () => {
    const t = tables.find((x) => x.table === table.value);
    fill(
      scopes,
      (t?.scopes ?? []).map((s) => h("option", { value: s })),
    );
    if (!scope.value && t?.scopes[0]) scope.value = t.scopes[0];
    void get<DedupRecordDto[]>("/api/dedup/sample", { table: table.value }).then((rs) =>
      fill(
        sample,
        rs.map((r) => h("li", {}, h("code", {}, r.pk), ` ${r.status ?? ""}`)),
      ),
    );
  };
  const lookup = async (e?: Event) => {
    e?.preventDefault();
    const r = await get<{ record: DedupRecordDto | null }>("/api/dedup/lookup", {
      table: table.value,
      scope: scope.value,
      key: key.value,
    });
    fill(out, recordView(r.record, key.value));
  };
  table.addEventListener("change", pickScopes);
  el.append(
    h("h2", {}, "Dedup tables"),
    tables.length === 0 ? h("p", { class: "empty" }, "no dedup table") : "",
    h(
      "form",
      { class: "controls", onsubmit: (e) => void lookup(e) },
      table,
      scope,
      scopes,
      key,
      h("button", { type: "submit", testid: "dedup-lookup" }, "Look up"),
    ),
    out,
    h("h3", {}, "Some keys of this table"),
    sample,
  );
  if (tables.length) pickScopes();
  return {};
};
