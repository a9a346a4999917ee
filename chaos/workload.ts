import type { MessageAttributeValue } from "@aws-sdk/client-sqs";
import type { InboxOutbox } from "reliable-consumers/outbox";
import { CHAOS_ID, type Expectation } from "./invariants.ts";
import type { Rng } from "./rng.ts";

/**
 * Orders for the reference service, with a share of poison. Every message carries a `chaos-id`
 * attribute (kept by the consumer when it parks the message), so the checks can tell what became
 * of each one.
 */
export interface Workload {
  readonly messages: Array<{ body: string; attributes: Record<string, MessageAttributeValue> }>;
  readonly expected: Map<string, Expectation>;
  readonly good: number;
  readonly poison: number;
}

const POISON = [
  { kind: "invalid-json", errorType: "InvalidJsonError", body: (i: number) => `{"orderId":"bad-${i}",` },
  {
    kind: "wrong-schema",
    errorType: "SchemaValidationError",
    body: (i: number) => JSON.stringify({ orderId: `bad-${i}`, customerId: "c", amountCents: -5 }),
  },
  {
    kind: "missing-id",
    errorType: "SchemaValidationError",
    body: () => JSON.stringify({ customerId: "c", amountCents: 100, items: [] }),
  },
  {
    kind: "garbage",
    errorType: "InvalidJsonError",
    body: (i: number) => `\u00ff\u00fe${"\u0009\ufffd\u00c3".repeat(8)}${i}`,
  },
] as const;

export function makeOrders(
  count: number,
  options: { poisonRate?: number; declineRate?: number; rng: Rng; runId: string },
): Workload {
  const messages: Workload["messages"] = [];
  const expected = new Map<string, Expectation>();
  let poison = 0;
  for (let i = 0; i < count; i++) {
    const chaosId = `${options.runId}-${i}`;
    const attributes = { [CHAOS_ID]: { DataType: "String", StringValue: chaosId } };
    if (options.rng.chance(options.poisonRate ?? 0)) {
      const p = POISON[i % POISON.length]!;
      messages.push({ body: p.body(i), attributes });
      expected.set(chaosId, { kind: "sqs-poison", errorType: p.errorType });
      poison++;
      continue;
    }
    const orderId = `${options.runId}-o${i}`;
    const declined = options.rng.chance(options.declineRate ?? 0);
    messages.push({
      body: JSON.stringify({
        orderId,
        customerId: `c${i % 97}`,
        amountCents: declined ? 5_000_000 : 100 + (i % 1000),
        items: [{ sku: `sku-${i % 13}`, qty: 1 + (i % 3) }],
      }),
      attributes,
    });
    expected.set(chaosId, declined ? { kind: "declined", orderId } : { kind: "good", orderId });
    if (declined) poison++;
  }
  return { messages, expected, good: count - poison, poison };
}

/** An account event the order checks look for: its aggregate and version. */
export interface AccountVersion {
  readonly agg: string;
  readonly v: number;
}

/**
 * Version `v` of every account aggregate, one unit of work each, with one outbox event to `topic`;
 * each event id is recorded in `into`, so a scenario can check every aggregate's order later.
 * `idPrefix` keeps the inbox ids of one run apart from another's.
 */
export async function writeAccountVersion(
  uow: InboxOutbox,
  options: { topic: string; aggregates: readonly string[]; v: number; into: Map<string, AccountVersion> },
  idPrefix = "",
): Promise<void> {
  const { topic, aggregates, v, into } = options;
  await Promise.all(
    aggregates.map(async (agg) => {
      const r = await uow.run(
        {
          id: `${idPrefix}${agg}-${v}`,
          idSource: "business",
          key: agg,
          body: {},
          raw: "{}",
          headers: {},
          attempt: 1,
          source: {
            kind: "sqs",
            queueArn: "arn:aws:sqs:us-east-1:000000000000:chaos",
            messageId: `${agg}-${v}`,
          },
        },
        (tx) => {
          into.set(
            tx.publish({
              aggregateType: "account",
              aggregateId: agg,
              eventType: "Changed",
              payload: { agg, v },
              destination: `kafka:${topic}`,
            }),
            { agg, v },
          );
        },
      );
      if (r.status !== "committed") throw new Error(`seeding ${agg}-${v}: ${r.status}`);
    }),
  );
}
