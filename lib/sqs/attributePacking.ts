/**
 * SQS allows at most 10 message attributes. Dead-letter context must never push out a user's own
 * attributes, so: when there is room, the context rides in one extra attribute; when the user
 * already uses all 10, their attributes and the context are folded together into one attribute
 * that the redrive tool unfolds. Pure: no SDK types.
 */
import { SQS_LIMITS } from "./sqsLimits.ts";

export interface PlainAttribute {
  readonly DataType: string;
  readonly StringValue?: string;
  /** base64 for Binary attributes */
  readonly BinaryValueBase64?: string;
}

/** One attribute holding the failure context as JSON (x-original-queue, x-retry-count, ...). */
export const CONTEXT_ATTRIBUTE = "x-failure-context";
/** Used only when the user has 10 attributes: `{ attributes, context }` as JSON. */
export const FOLDED_ATTRIBUTE = "x-folded-attributes";

/** Packs the failure context beside the user's attributes within SQS's 10-attribute limit. */
export function packAttributes(
  user: Readonly<Record<string, PlainAttribute>>,
  context: Readonly<Record<string, string>>,
): Record<string, PlainAttribute> {
  const ours = Object.keys(user).filter((name) => name !== CONTEXT_ATTRIBUTE && name !== FOLDED_ATTRIBUTE);
  const kept = Object.fromEntries(ours.map((name) => [name, user[name]!]));
  const contextJson = JSON.stringify(context);
  if (ours.length < SQS_LIMITS.maxAttributes) {
    return { ...kept, [CONTEXT_ATTRIBUTE]: { DataType: "String", StringValue: contextJson } };
  }
  return {
    [FOLDED_ATTRIBUTE]: { DataType: "String", StringValue: JSON.stringify({ attributes: kept, context }) },
  };
}

/** The inverse, for redrive: the user's attributes as they were, and the context if any. */
export function unpackAttributes(attributes: Readonly<Record<string, PlainAttribute>>): {
  attributes: Record<string, PlainAttribute>;
  context: Record<string, string> | undefined;
} {
  const folded = attributes[FOLDED_ATTRIBUTE]?.StringValue;
  if (folded) {
    const parsed = JSON.parse(folded) as {
      attributes: Record<string, PlainAttribute>;
      context: Record<string, string>;
    };
    return { attributes: parsed.attributes, context: parsed.context };
  }
  const { [CONTEXT_ATTRIBUTE]: ctx, ...rest } = attributes;
  return {
    attributes: rest,
    context: ctx?.StringValue ? (JSON.parse(ctx.StringValue) as Record<string, string>) : undefined,
  };
}

/** The failure context's name for the id the consumer deduplicated the message under. */
const CONTEXT_MESSAGE_ID = "x-message-id";
/** The producer's own id attribute, which key resolution reads before `x-message-id`. */
const PRODUCER_MESSAGE_ID = "message-id";

/**
 * The attributes of a copy (a requeue, a park, a redrive) that must deduplicate under `id`, the id
 * its record deduplicated under: the user's own as they are when they already name it
 * (`message-id`, or `x-message-id` as an attribute of its own), else with `x-message-id` beside
 * them, or, when they already fill SQS's 10, folded together with it (`packAttributes`). Key
 * resolution reads the id from either place (`carriedMessageId`), and a copy of the copy comes back
 * here with the same id, so it survives any depth of copying. Without it a copy dedups under its own
 * new messageId and runs its effect again while the original may still be running elsewhere.
 */
export function withMessageId(
  user: Readonly<Record<string, PlainAttribute>>,
  id: string,
): Record<string, PlainAttribute> {
  const named = user[PRODUCER_MESSAGE_ID]?.StringValue ?? user[CONTEXT_MESSAGE_ID]?.StringValue;
  if (named === id) return { ...user };
  if (Object.keys(user).length < SQS_LIMITS.maxAttributes)
    return { ...user, [CONTEXT_MESSAGE_ID]: { DataType: "String", StringValue: id } };
  return packAttributes(user, { [CONTEXT_MESSAGE_ID]: id });
}

/**
 * The `x-message-id` a message redriven from a DLQ carries: its own attribute, else the one in its
 * packed failure context (SQS's move task keeps the attributes as they were parked). Pure: takes
 * the string attributes by name.
 */
export function carriedMessageId(strings: Readonly<Record<string, string | undefined>>): string | undefined {
  const own = strings[CONTEXT_MESSAGE_ID];
  if (own) return own;
  const packed = strings[CONTEXT_ATTRIBUTE] ?? strings[FOLDED_ATTRIBUTE];
  if (packed === undefined) return undefined;
  try {
    const parsed = JSON.parse(packed) as Record<string, unknown>;
    const context = (strings[CONTEXT_ATTRIBUTE] !== undefined ? parsed : parsed.context) as
      | Record<string, unknown>
      | undefined;
    const id = context?.[CONTEXT_MESSAGE_ID];
    return typeof id === "string" && id !== "" ? id : undefined;
  } catch {
    return undefined; // not our packing
  }
}
