/**
 * Keys this container has seen in the dedup table (claimed, completed, or met as a duplicate or in
 * progress), at most `limit` of them, the oldest forgotten first. Only a hint of which path a claim
 * takes: a known key is read before anything is written, since a write would only fail on it (a
 * failed conditional write costs a write unit; a strongly consistent read costs a read unit, a
 * fifth of the price). The table always decides. Container scope: concurrent invocations share it,
 * and every operation is synchronous.
 */
export interface KnownKeys {
  has(key: string): boolean;
  add(key: string): void;
  /** The item is gone (released): the next claim inserts again. */
  delete(key: string): void;
}

/** @param limit entries kept (about 100 bytes each). */
export function createKnownKeys(limit = 10_000): KnownKeys {
  const keys = new Set<string>();
  return {
    has: (key) => keys.has(key),
    add(key) {
      keys.delete(key);
      keys.add(key);
      if (keys.size > limit) keys.delete(keys.values().next().value!);
    },
    delete: (key) => void keys.delete(key),
  };
}
