/**
 * The broker's error inside kafkajs's wrappers: its retrier wraps the protocol error in `cause`
 * (KafkaJSNumberOfRetriesExceeded) or `originalError`, up to a few levels deep.
 * Returns the first error whose `type` is one of `types` (any type when `types` is omitted).
 */
export function findBrokerError(
  error: unknown,
  types?: ReadonlySet<string>,
): (Error & { type: string }) | undefined {
  for (let e = error as Record<string, unknown> | undefined, depth = 0; e && depth < 5; depth++) {
    if (typeof e.type === "string" && (!types || types.has(e.type)))
      return e as unknown as Error & { type: string };
    e = (e.originalError ?? e.cause) as Record<string, unknown> | undefined;
  }
  return undefined;
}
