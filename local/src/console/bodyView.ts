/**
 * How the console shows what a message carries: a body as pretty-printed JSON, as text, or as
 * hex bytes; the failure context as fields. Always as text for the page to put in text nodes,
 * never markup. Pure.
 */
import { CONTEXT_HEADERS } from "reliable-consumers";
import type { BodyDto, FailureContextDto } from "./consoleApi.ts";

/** What the page gets of a body at most; the rest is cut, and said so. */
export const MAX_SHOWN_BYTES = 64 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Text a person can read: no control characters but tab, line feed and carriage return. */
function printable(text: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: that is the point of the check
  return !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text);
}

function hex(bytes: Uint8Array): string {
  const shown = bytes.subarray(0, MAX_SHOWN_BYTES / 2);
  const pairs = Array.from(shown, (b) => b.toString(16).padStart(2, "0"));
  const lines: string[] = [];
  for (let i = 0; i < pairs.length; i += 16) lines.push(pairs.slice(i, i + 16).join(" "));
  return (
    lines.join("\n") + (bytes.length > shown.length ? `\n… ${bytes.length - shown.length} more bytes` : "")
  );
}

function cut(text: string): string {
  return text.length > MAX_SHOWN_BYTES
    ? `${text.slice(0, MAX_SHOWN_BYTES)}\n… cut at ${MAX_SHOWN_BYTES} characters`
    : text;
}

/** A body (SQS's string, or a Kafka key's or value's bytes) as the page shows it. */
export function bodyView(body: string | Uint8Array): BodyDto {
  let text: string;
  let bytes: number;
  if (typeof body === "string") {
    text = body;
    bytes = Buffer.byteLength(body, "utf8");
  } else {
    bytes = body.length;
    try {
      text = utf8.decode(body);
    } catch {
      return { kind: "hex", text: hex(body), bytes };
    }
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null)
      return { kind: "json", text: cut(JSON.stringify(parsed, null, 2)), bytes };
  } catch {
    // not JSON: text or bytes
  }
  if (printable(text)) return { kind: "text", text: cut(text), bytes };
  return { kind: "hex", text: hex(Buffer.from(text, "utf8")), bytes };
}

/** Our context headers (`x-last-error`, …) as named fields, and all of them as they are. */
export function contextView(headers: Readonly<Record<string, string>>): FailureContextDto {
  const pick = (name: string) => (headers[name] !== undefined ? headers[name] : undefined);
  const fields = {
    lastError: pick(CONTEXT_HEADERS.lastError),
    retryCount: pick(CONTEXT_HEADERS.retryCount),
    firstFailedAt: pick(CONTEXT_HEADERS.firstFailedAt),
    originalQueue: pick(CONTEXT_HEADERS.originalQueue),
    originalTopic: pick(CONTEXT_HEADERS.originalTopic),
    messageId: pick(CONTEXT_HEADERS.messageId),
    consumer: pick(CONTEXT_HEADERS.consumer),
  };
  return {
    ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)),
    all: { ...headers },
  };
}
