/**
 * A small seeded PRNG (mulberry32), so a chaos run is reproducible: the same seed injects the same
 * faults at the same decision points (timing still varies, so outcomes may differ a little).
 */
export interface Rng {
  /** [0, 1) */
  next(): number;
  /** true with probability p */
  chance(p: number): boolean;
  /** an integer in [min, max] */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  readonly seed: number;
}

export function createRng(seed: number = Date.now() >>> 0): Rng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    chance: (p) => p > 0 && next() < p,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => {
      if (items.length === 0) throw new Error("pick from an empty list");
      return items[Math.floor(next() * items.length)]!;
    },
  };
}
