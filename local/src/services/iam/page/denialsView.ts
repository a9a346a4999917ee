/** Denials: each call the local runtime refused for lack of a grant, with the grant that would allow it. Live. */
import type { DenialDto } from "../../../console/consoleApi.ts";
import { get } from "../../../console/page/api.ts";
import { fill, h, table, time } from "../../../console/page/dom.ts";
import type { ViewFactory } from "../../../console/page/view.ts";

export const denialsView: ViewFactory = async (el, { overview }) => {
  el.append(h("h2", {}, "Denied calls"));
  if (overview.mode !== "app") {
    el.append(
      h(
        "p",
        { class: "note" },
        "Denials need reliable-consumers local (the runtime enforces each function's IAM policies).",
      ),
    );
    return {};
  }
  const denials = [...(await get<DenialDto[]>("/api/denials"))];
  const body = h("div");
  const draw = () =>
    fill(
      body,
      h("p", { testid: "denial-count" }, `${denials.length} denied`),
      table(
        "denials",
        ["time", "function", "action", "resource", "AWS said", "grant it with"],
        denials.map((d) => [
          time(d.at),
          d.functionName,
          d.action,
          d.resource,
          d.message,
          h("code", {}, d.advice),
        ]),
      ),
    );
  draw();
  el.append(body);
  return {
    onEvent(event, data) {
      if (event !== "denial") return;
      denials.push(data as DenialDto);
      draw();
    },
  };
};
