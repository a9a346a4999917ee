/** Small helpers of the benchmarks' figures. */

/** `x` rounded to `d` decimals. */
export const round = (x: number, d: number): number => Math.round(x * 10 ** d) / 10 ** d;

/** The median item of `items` by `by` (the lower of the two middle ones for an even count). */
export const medianOf = <T>(items: T[], by: (t: T) => number): T =>
  [...items].sort((x, y) => by(x) - by(y))[Math.floor((items.length - 1) / 2)]!;
