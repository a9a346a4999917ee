import type { AttributeValue } from "@aws-sdk/client-dynamodb";

/**
 * DynamoDB's item-size rules ("Item sizes and formats" in the Developer Guide), so a unit of work
 * too large for one transaction fails before anything is written:
 * - strings and binary: their UTF-8 / byte length; attribute names count the same way;
 * - numbers: about 1 byte per two significant digits, plus 1;
 * - booleans and null: 1 byte;
 * - lists and maps: 3 bytes, plus 1 byte per element, plus the elements (and the map keys).
 * The estimate errs a little high, never low.
 */
export const TRANSACTION_LIMITS = {
  /** TransactWriteItems: at most 100 actions. */
  maxActions: 100,
  /** The aggregate size of the items in one transaction. */
  maxTransactionBytes: 4 * 1024 * 1024,
  /** Any single item. */
  maxItemBytes: 400 * 1024,
} as const;

const utf8 = (s: string) => Buffer.byteLength(s, "utf8");

function numberSize(n: string): number {
  const digits = n
    .replace(/^[-+]/, "")
    .replace(/e.*$/i, "")
    .replace(".", "")
    .replace(/^0+/, "")
    .replace(/0+$/, "");
  return Math.ceil(Math.max(digits.length, 1) / 2) + 1;
}

function binarySize(b: Uint8Array | undefined): number {
  return b?.byteLength ?? 0;
}

/** The size of one attribute value as DynamoDB counts it. */
export function attributeValueSize(v: AttributeValue): number {
  if (v.S !== undefined) return utf8(v.S);
  if (v.N !== undefined) return numberSize(v.N);
  if (v.B !== undefined) return binarySize(v.B);
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((t, x) => t + utf8(x), 0);
  if (v.NS !== undefined) return v.NS.reduce((t, x) => t + numberSize(x), 0);
  if (v.BS !== undefined) return v.BS.reduce((t, x) => t + binarySize(x), 0);
  if (v.L !== undefined) return v.L.reduce((t, x) => t + 1 + attributeValueSize(x), 3);
  if (v.M !== undefined)
    return Object.entries(v.M).reduce((t, [k, x]) => t + utf8(k) + 1 + attributeValueSize(x), 3);
  return 0;
}

/** The size of an item as DynamoDB counts it (against its 400 KB limit). */
export function itemSize(item: Record<string, AttributeValue>): number {
  let total = 0;
  for (const [name, value] of Object.entries(item)) total += utf8(name) + attributeValueSize(value);
  return total;
}
