/**
 * The page's one way to make elements: `h(tag, props, ...children)`. Children that are strings
 * become text nodes, so nothing that came from a message (a body, a header, an error) is ever
 * parsed as markup; nothing in the page sets HTML from a string (test/unit/console.test.ts holds it).
 */
export type Child = Node | string | number | null | undefined | false | readonly Child[];

export interface Props {
  readonly class?: string;
  /** Only the console's own routes (`#/…`). */
  readonly href?: `#${string}`;
  readonly testid?: string;
  readonly title?: string;
  readonly type?: string;
  readonly value?: string;
  readonly placeholder?: string;
  readonly checked?: boolean;
  readonly disabled?: boolean;
  readonly onclick?: (e: MouseEvent) => void;
  readonly onchange?: (e: Event) => void;
  readonly oninput?: (e: Event) => void;
  readonly onsubmit?: (e: SubmitEvent) => void;
}

function append(el: Element, child: Child): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child as readonly Child[]) append(el, c);
    return;
  }
  el.append(
    typeof child === "string" || typeof child === "number"
      ? document.createTextNode(String(child))
      : (child as Node),
  );
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class) el.className = props.class;
  if (props.href) el.setAttribute("href", props.href);
  if (props.testid) el.dataset.testid = props.testid;
  if (props.title) el.title = props.title;
  if (props.type) el.setAttribute("type", props.type);
  if (props.placeholder) el.setAttribute("placeholder", props.placeholder);
  if (props.value !== undefined && "value" in el) (el as HTMLInputElement).value = props.value;
  if (props.checked !== undefined && "checked" in el) (el as HTMLInputElement).checked = props.checked;
  if (props.disabled) el.setAttribute("disabled", "");
  if (props.onclick) el.addEventListener("click", props.onclick as EventListener);
  if (props.onchange) el.addEventListener("change", props.onchange);
  if (props.oninput) el.addEventListener("input", props.oninput);
  if (props.onsubmit) el.addEventListener("submit", props.onsubmit as EventListener);
  append(el, children);
  return el;
}

/** Replaces an element's children. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** A table of rows; each cell a child. */
export function table(
  testid: string,
  headers: readonly string[],
  rows: readonly (readonly Child[])[],
): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty", testid }, "none");
  return h(
    "table",
    { testid },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        headers.map((x) => h("th", {}, x)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          {},
          r.map((c) => h("td", {}, c)),
        ),
      ),
    ),
  );
}

/** Fields as a definition list, the absent ones left out. */
export function fields(testid: string, entries: ReadonlyArray<readonly [string, Child]>): HTMLElement {
  return h(
    "dl",
    { class: "fields", testid },
    entries
      .filter(([, v]) => v !== undefined && v !== null && v !== "")
      .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
  );
}

export const route = (...parts: string[]): `#${string}` => `#/${parts.map(encodeURIComponent).join("/")}`;

export function age(ms: number | undefined): string {
  if (ms === undefined) return "";
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

export function time(epochMs: number | undefined): string {
  return epochMs === undefined ? "" : new Date(epochMs).toISOString().replace("T", " ").slice(0, 23);
}
