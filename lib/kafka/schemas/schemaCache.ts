/**
 * A per-container cache of promises: each key is loaded once, even when many records of one
 * batch (or of concurrent invocations in one process, as on Lambda Managed Instances) ask for it at
 * the same time, since they all await the same promise. A failed load is forgotten, so the next
 * record tries again (a registry that was unreachable is asked again, not remembered as broken).
 * Schemas by id are immutable in both registries, so a loaded entry never goes stale.
 */
export interface PromiseCache<K, V> {
  get(key: K): Promise<V>;
  readonly size: number;
}

export function createPromiseCache<K, V>(
  load: (key: K) => Promise<V>,
  maxEntries = 1000,
): PromiseCache<K, V> {
  const entries = new Map<K, Promise<V>>();
  return {
    get(key) {
      const hit = entries.get(key);
      if (hit) return hit;
      const p = load(key);
      entries.set(key, p);
      p.catch(() => {
        if (entries.get(key) === p) entries.delete(key);
      });
      // Bounded: the oldest entry goes first (ids are few in practice; this only guards a leak).
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as K);
      return p;
    },
    get size() {
      return entries.size;
    },
  };
}
