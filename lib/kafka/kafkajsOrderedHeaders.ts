import type { IHeaders } from "kafkajs";
import Encoder from "kafkajs/src/protocol/encoder.js";

/**
 * Kafka headers are an ordered list in which a name may repeat (KIP-82; the Java client's
 * `Headers`, whose `lastHeader(name)` is the last of that name). kafkajs 2.2.4 takes a record's
 * headers as an object only (`IHeaders`: a name to a value, or to an array of values) and writes
 * them name by name in `Object.keys` order (`protocol/recordBatch/record/v0/index.js`), so
 * `a=1, b=2, a=3` goes out as `a=1, a=3, b=2`, and names that look like integers go first. Every
 * value survives, and each name's values keep their order, but the order across names does not.
 *
 * This module writes them in their own order. `kafkajsHeaders` turns the list into the object
 * kafkajs wants, with each value a fresh Buffer remembered with its position in the list; the
 * patched `Encoder.writeVarIntBytes` marks the header encoder that wrote such a Buffer with that
 * position, and the patched `Encoder.writeVarIntArray` writes an array made only of marked
 * encoders (the record's headers, and nothing else) in position order. Only buffers made here are
 * marked, so every other array kafkajs writes is untouched, and the record's size (computed from
 * the same headers) does not depend on their order.
 *
 * It patches the class's prototype when this module is first imported, as the other kafkajs fixes
 * do (kafkajsRequestQueueFix.ts): a bundle resolves this import and kafkajs's own
 * `require('../../../encoder')` to the same class. The real-broker test in kafkaConsumer.test.ts
 * ("keeps repeated header names in order") reads the headers back in their wire order.
 */
const FIXED = Symbol.for("reliable-consumers.kafkajsOrderedHeaders");
const POSITION = Symbol.for("reliable-consumers.kafkajsOrderedHeaders.position");

type Marked = Encoder & { [POSITION]?: number };
type Patched = typeof Encoder.prototype & { [FIXED]?: true };
const proto = Encoder.prototype as Patched;

/** Where each value buffer made by `kafkajsHeaders` stands in its record's header list. */
const positions = new WeakMap<object, number>();

if (!proto[FIXED]) {
  const writeVarIntBytes = proto.writeVarIntBytes;
  proto.writeVarIntBytes = function writeMarkedBytes(this: Marked, value: unknown) {
    const written = writeVarIntBytes.call(this, value);
    const at = typeof value === "object" && value !== null ? positions.get(value) : undefined;
    if (at !== undefined) this[POSITION] = at;
    return written;
  };
  const writeVarIntArray = proto.writeVarIntArray;
  proto.writeVarIntArray = function writeInPositionOrder(this: Encoder, array: unknown[], type?: string) {
    const marked =
      array.length > 1 && array.every((e) => (e as Marked | null)?.[POSITION] !== undefined)
        ? [...array].sort((a, b) => (a as Marked)[POSITION]! - (b as Marked)[POSITION]!)
        : array;
    return writeVarIntArray.call(this, marked, type);
  };
  proto[FIXED] = true;
}

/** One Kafka header: its name and its value. A record's headers are a list; a name may repeat. */
export interface KafkaHeader {
  /** The header's name (a key of the record's header list). */
  readonly name: string;
  /** Its value: bytes, or text written as UTF-8. */
  readonly value: string | Buffer;
}

/** kafkajs's headers object for `list`, which the patched encoder writes in the list's order. */
export function kafkajsHeaders(list: ReadonlyArray<KafkaHeader>): IHeaders {
  // No prototype: a header may be named `__proto__`.
  const out: Record<string, Buffer[]> = Object.create(null);
  list.forEach((h, i) => {
    // A copy, so the mark belongs to this header alone (the caller's buffer may be written elsewhere).
    const value = Buffer.from(h.value);
    positions.set(value, i);
    out[h.name] = [...(out[h.name] ?? []), value];
  });
  return out;
}

/** True once the encoder is patched (it is, as soon as this module is imported). */
export const kafkajsOrderedHeadersFixed = (): boolean => proto[FIXED] === true;
