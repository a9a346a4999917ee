/**
 * A stream record's payload as the body of an SQS message: text as it is when SQS can carry it,
 * anything else (binary, Avro, text with characters SQS refuses) as base64 with an attribute that
 * says so, so a replay gets the exact bytes back. Pure.
 */

/** The attribute naming a parked body's encoding; present (`base64`, `empty`) only when the body is not the payload's text itself. */
export const PAYLOAD_ENCODING_ATTRIBUTE = "x-payload-encoding";

/**
 * A parked record's body and how to read it back: `text` is the payload itself; `base64` the bytes
 * in base64; `empty` a payload of no bytes (SQS refuses an empty body, so the body is a placeholder).
 */
export interface ParkedPayload {
  readonly body: string;
  readonly encoding: "text" | "base64" | "empty";
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * SQS accepts #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF in a
 * message body (SendMessage, MessageBody); anything else is refused.
 */
const SQS_BODY_TEXT = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

/** The bytes as text when they are UTF-8 that SQS accepts; else base64. */
export function parkedPayloadOf(bytes: Uint8Array): ParkedPayload {
  if (bytes.length === 0) return { body: "-", encoding: "empty" };
  let text: string | undefined;
  try {
    text = utf8.decode(bytes);
  } catch {
    text = undefined;
  }
  if (text !== undefined && SQS_BODY_TEXT.test(text)) return { body: text, encoding: "text" };
  return { body: Buffer.from(bytes).toString("base64"), encoding: "base64" };
}
