/** One message or dead letter as cards of fields: context, attributes or headers, body. All text. */
import type { AttributeDto, BodyDto, FailureContextDto } from "../../consoleApi.ts";
import { fields, h, table } from "../dom.ts";

export function contextFields(c: FailureContextDto | undefined): HTMLElement | null {
  if (!c) return null;
  const known = new Set([
    "x-last-error",
    "x-retry-count",
    "x-first-failed-at",
    "x-original-queue",
    "x-original-topic",
    "x-message-id",
    "x-consumer",
  ]);
  return fields("failure-context", [
    ["x-last-error", c.lastError],
    ["x-retry-count", c.retryCount],
    ["x-first-failed-at", c.firstFailedAt],
    ["x-original-queue", c.originalQueue],
    ["x-original-topic", c.originalTopic],
    ["x-message-id", c.messageId],
    ["x-consumer", c.consumer],
    ...Object.entries(c.all).filter(([k]) => !known.has(k)),
  ]);
}

export function attributeTable(testid: string, list: readonly AttributeDto[]): HTMLElement {
  return table(
    testid,
    ["name", "type", "value"],
    list.map((a) => [a.name, a.type, a.value]),
  );
}

export function bodyBlock(label: string, body: BodyDto | null): HTMLElement {
  if (!body) return h("p", { class: "empty" }, `${label}: none`);
  const kind = body.kind === "json" ? "JSON" : body.kind === "hex" ? "bytes (hex)" : "text";
  return h(
    "div",
    { class: "body" },
    h("div", { class: "label" }, `${label} · ${kind} · ${body.bytes} bytes`),
    h("pre", { testid: "body" }, body.text),
  );
}
