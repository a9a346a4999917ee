/**
 * SQS allows at most 10 message attributes. Dead-letter context must never push out a user's own
 * attributes, and a producer's headers must never be dropped, so there is one folding format,
 * written by every sender of ours and unfolded by every reader:
 *
 * - the failure context rides in one extra attribute (`x-failure-context`) when there is room;
 * - what does not fit is folded into one attribute, `x-folded-attributes`: JSON
 *   `{ attributes, context }`, the attributes as `PlainAttribute`s by name. It may sit beside
 *   attributes that stay outside it (the outbox publisher keeps its own, `event-type`, … outside
 *   and folds the user's headers); on unfolding, one outside wins over a folded one of the same name.
 *
 * Readers: the consumer's envelope (`sqsEnvelope.ts`), every copy it sends (`plainAttributes`), the
 * redrive tool and the local console (`unpackAttributes`). Pure: no SDK types.
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
/** Attributes that do not fit as attributes of their own, with our context if any: `{ attributes, context }` as JSON. */
export const FOLDED_ATTRIBUTE = "x-folded-attributes";

/**
 * `attributes` (and `context`) folded into the one attribute `x-folded-attributes`: what a sender
 * puts beside the attributes that stay outside, within SQS's 10.
 */
export function foldAttributes(
  attributes: Readonly<Record<string, PlainAttribute>>,
  context: Readonly<Record<string, string>> = {},
): Record<string, PlainAttribute> {
  return {
    [FOLDED_ATTRIBUTE]: { DataType: "String", StringValue: JSON.stringify({ attributes, context }) },
  };
}

/** `attributes` as they are when SQS takes that many, else all of them folded into one. */
export function fitAttributes(
  attributes: Readonly<Record<string, PlainAttribute>>,
): Record<string, PlainAttribute> {
  return Object.keys(attributes).length <= SQS_LIMITS.maxAttributes
    ? { ...attributes }
    : foldAttributes(attributes);
}

/** Packs the failure context beside the user's attributes within SQS's 10-attribute limit. */
export function packAttributes(
  user: Readonly<Record<string, PlainAttribute>>,
  context: Readonly<Record<string, string>>,
): Record<string, PlainAttribute> {
  const ours = Object.keys(user).filter((name) => name !== CONTEXT_ATTRIBUTE && name !== FOLDED_ATTRIBUTE);
  const kept = Object.fromEntries(ours.map((name) => [name, user[name]!]));
  if (ours.length < SQS_LIMITS.maxAttributes) {
    return { ...kept, [CONTEXT_ATTRIBUTE]: { DataType: "String", StringValue: JSON.stringify(context) } };
  }
  return foldAttributes(kept, context);
}

/**
 * The inverse, for every reader: the attributes as the sender had them (the ones outside the fold
 * and the folded ones, unfolded), and our failure context if any (an empty one is none).
 */
export function unpackAttributes(attributes: Readonly<Record<string, PlainAttribute>>): {
  attributes: Record<string, PlainAttribute>;
  context: Record<string, string> | undefined;
} {
  const { [CONTEXT_ATTRIBUTE]: ctx, [FOLDED_ATTRIBUTE]: fold, ...outside } = attributes;
  let context = ctx?.StringValue ? (JSON.parse(ctx.StringValue) as Record<string, string>) : undefined;
  let unfolded: Record<string, PlainAttribute> = {};
  if (fold?.StringValue) {
    const parsed = JSON.parse(fold.StringValue) as {
      attributes?: Record<string, PlainAttribute>;
      context?: Record<string, string>;
    };
    unfolded = parsed.attributes ?? {};
    if (parsed.context && Object.keys(parsed.context).length > 0) context = { ...parsed.context, ...context };
  }
  return { attributes: { ...unfolded, ...outside }, context };
}

/** The failure context's name for the id the consumer deduplicated the message under. */
const CONTEXT_MESSAGE_ID = "x-message-id";
/** The producer's own id attribute, which key resolution reads before `x-message-id`. */
const PRODUCER_MESSAGE_ID = "message-id";

/**
 * The attributes of a copy (a requeue, a park, a redrive) that must deduplicate under `id`, the id
 * its record deduplicated under: the user's own as they are when they already name it
 * (`message-id`, or `x-message-id` as an attribute of its own), else with `x-message-id` beside
 * them, or, when they already fill SQS's 10, folded together with it (`foldAttributes`). Key
 * resolution reads the id from either place (`carriedMessageId`), and a copy of the copy comes back
 * here with the same id, so it survives any depth of copying. Without it a copy dedups under its own
 * new messageId and runs its effect again while the original may still be running elsewhere.
 */
export function withMessageId(
  user: Readonly<Record<string, PlainAttribute>>,
  id: string,
): Record<string, PlainAttribute> {
  const named = user[PRODUCER_MESSAGE_ID]?.StringValue ?? user[CONTEXT_MESSAGE_ID]?.StringValue;
  if (named === id) return fitAttributes(user);
  if (Object.keys(user).length < SQS_LIMITS.maxAttributes)
    return { ...user, [CONTEXT_MESSAGE_ID]: { DataType: "String", StringValue: id } };
  return foldAttributes(user, { [CONTEXT_MESSAGE_ID]: id });
}

/**
 * The `x-message-id` a message redriven from a DLQ carries: its own attribute, else the one in its
 * packed failure context (SQS's move task keeps the attributes as they were parked). Pure: takes
 * the string attributes by name.
 */
export function carriedMessageId(strings: Readonly<Record<string, string | undefined>>): string | undefined {
  const own = strings[CONTEXT_MESSAGE_ID];
  if (own) return own;
  const contexts: Array<
    [packed: string | undefined, contextOf: (parsed: Record<string, unknown>) => unknown]
  > = [
    [strings[CONTEXT_ATTRIBUTE], (parsed) => parsed],
    [strings[FOLDED_ATTRIBUTE], (parsed) => parsed.context],
  ];
  for (const [packed, contextOf] of contexts) {
    if (packed === undefined) continue;
    try {
      const context = contextOf(JSON.parse(packed) as Record<string, unknown>) as
        | Record<string, unknown>
        | undefined;
      const id = context?.[CONTEXT_MESSAGE_ID];
      if (typeof id === "string" && id !== "") return id;
    } catch {
      // not our packing
    }
  }
  return undefined;
}
