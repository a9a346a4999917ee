import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { SQSRecord } from "aws-lambda";
import { type Envelope, resolveDedupKey } from "../core/envelope.ts";
import {
  InvalidJsonError,
  MissingIdError,
  PayloadTooLargeError,
  SchemaValidationError,
} from "../core/errors.ts";
import { CONTEXT_HEADERS } from "../core/failureContext.ts";
import { carriedMessageId, FOLDED_ATTRIBUTE, unpackAttributes } from "./attributePacking.ts";

/** How an SQS record is read into its envelope: parsing, schema, business key, size limit. */
export interface SqsEnvelopeOptions<T> {
  /** How to read the body. @default "json" */
  readonly parse?: "json" | "text";
  /** Standard Schema (zod, valibot, arktype...) the parsed body must satisfy. */
  readonly schema?: StandardSchemaV1<unknown, T>;
  /** The business key: the best dedup key (survives producer resends and regenerated events). */
  readonly key?: (body: T, record: SQSRecord) => string | undefined;
  /** Bodies larger than this are rejected as permanent errors. @default SQS_ENVELOPE_DEFAULTS.maxBodyBytes */
  readonly maxBodyBytes?: number;
}

/** How an SQS record is read by default. */
export const SQS_ENVELOPE_DEFAULTS = {
  parse: "json" as "json" | "text",
  /**
   * 1 MiB (1,048,576 bytes): SQS's message size limit and the SQS trigger's, since they were raised
   * from 256 KiB. A body the queue accepted is never parked as too large by default; set a lower
   * limit to refuse bodies your handler cannot afford.
   */
  maxBodyBytes: 1_048_576,
};

function headersOf(record: SQSRecord): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, attr] of Object.entries(record.messageAttributes ?? {})) {
    if (attr?.stringValue !== undefined) out[name] = attr.stringValue;
  }
  // A copy redriven from a DLQ (or requeued) carries the original's id in its failure context: dedup
  // it under that id, not its new message id (lib/dlq/sqsDeadLetters.ts, redrivenAttributes).
  const carried = carriedMessageId(out);
  // A copy of a record that used all 10 attributes carries them folded with our context: unfold.
  const folded = out[FOLDED_ATTRIBUTE];
  if (folded !== undefined) {
    const user = foldedUserAttributes(folded);
    if (user) {
      delete out[FOLDED_ATTRIBUTE];
      for (const [name, a] of Object.entries(user))
        if (a.StringValue !== undefined) out[name] ??= a.StringValue;
    }
  }
  if (carried !== undefined) out[CONTEXT_HEADERS.messageId] = carried;
  return out;
}

function foldedUserAttributes(folded: string) {
  try {
    return unpackAttributes({ [FOLDED_ATTRIBUTE]: { DataType: "String", StringValue: folded } }).attributes;
  } catch {
    return undefined; // not our packing: leave it as the user's own attribute
  }
}

/** Normalises an SQS record to the envelope. Throws typed permanent errors for bad input. */
export async function toSqsEnvelope<T>(
  record: SQSRecord,
  options: SqsEnvelopeOptions<T>,
): Promise<Envelope<T>> {
  const raw = record.body ?? "";
  const maxBytes = options.maxBodyBytes ?? SQS_ENVELOPE_DEFAULTS.maxBodyBytes;
  if (Buffer.byteLength(raw, "utf8") > maxBytes) {
    throw new PayloadTooLargeError(
      `body is ${Buffer.byteLength(raw, "utf8")} bytes, over the ${maxBytes}-byte limit`,
    );
  }
  let body: unknown = raw;
  if ((options.parse ?? SQS_ENVELOPE_DEFAULTS.parse) === "json") {
    try {
      body = JSON.parse(raw);
    } catch (error) {
      throw new InvalidJsonError(`body is not valid JSON: ${(error as Error).message}`);
    }
  }
  if (options.schema) {
    let result = options.schema["~standard"].validate(body);
    if (result instanceof Promise) result = await result;
    if (result.issues) {
      const summary = result.issues
        .slice(0, 5)
        .map(
          (i) =>
            `${(i.path ?? []).map((p) => (typeof p === "object" ? String(p.key) : String(p))).join(".") || "(root)"}: ${i.message}`,
        )
        .join("; ");
      throw new SchemaValidationError(`body does not match the schema: ${summary}`, result.issues);
    }
    body = result.value;
  }
  const headers = headersOf(record);
  let businessKey: string | undefined;
  if (options.key) {
    businessKey = options.key(body as T, record);
    if (businessKey === undefined || businessKey === "") {
      throw new MissingIdError("the key function returned no business key for this record");
    }
  }
  const { id, idSource } = resolveDedupKey(businessKey, headers, record.messageId);
  return {
    id,
    idSource,
    key: record.attributes?.MessageGroupId,
    body: body as T,
    raw,
    headers,
    attempt: Number(record.attributes?.ApproximateReceiveCount ?? 1),
    source: { kind: "sqs", queueArn: record.eventSourceARN, messageId: record.messageId },
  };
}
