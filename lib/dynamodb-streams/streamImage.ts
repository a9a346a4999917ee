/**
 * DynamoDB Streams images in the Lambda event's JSON (binary as base64) unmarshalled to plain
 * objects with `@aws-sdk/util-dynamodb`: numbers as numbers (BigInt past the safe range), binary as
 * Uint8Array, sets as Sets. Pure.
 */
import type { AttributeValue as SdkAttributeValue } from "@aws-sdk/client-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import type { AttributeValue as LambdaAttributeValue } from "aws-lambda";
import { MalformedRecordError } from "../core/errors.ts";

/** A plain object read from an image or a key. */
export type PlainItem = Record<string, unknown>;

const bytes = (b64: string) => new Uint8Array(Buffer.from(b64, "base64"));

/** One attribute value of the Lambda event (binary as base64) in the SDK's shape (binary as bytes). */
function toSdk(v: LambdaAttributeValue): SdkAttributeValue {
  if (v.B !== undefined) return { B: bytes(v.B) };
  if (v.BS !== undefined) return { BS: v.BS.map(bytes) };
  if (v.L !== undefined) return { L: v.L.map(toSdk) };
  if (v.M !== undefined) return { M: toSdkImage(v.M) };
  return v as SdkAttributeValue;
}

function toSdkImage(image: Record<string, LambdaAttributeValue>): Record<string, SdkAttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([k, v]) => [k, toSdk(v)]));
}

/** An image (or the keys) as a plain object; undefined for no image. MalformedRecordError when it cannot be read. */
export function unmarshallImage(
  image: Record<string, LambdaAttributeValue> | undefined,
  what: string,
): PlainItem | undefined {
  if (image === undefined) return undefined;
  try {
    return unmarshall(toSdkImage(image)) as PlainItem;
  } catch (error) {
    throw new MalformedRecordError(`${what} cannot be unmarshalled: ${(error as Error).message}`);
  }
}

/** The item's key as one stable string (attributes by name), the ordering key of `ordering: "key"`. */
export function itemKeyOf(keys: Record<string, LambdaAttributeValue> | undefined): string | undefined {
  if (keys === undefined) return undefined;
  return JSON.stringify(
    Object.keys(keys)
      .sort()
      .map((name) => [name, keys[name]]),
  );
}
