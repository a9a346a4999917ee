import { describe, expect, it } from "vitest";
import { takeGroup } from "../../lib/dedup/statementBatcher.ts";

const q = (...items: string[]) => items.map((item, i) => ({ item, n: i }));

describe("takeGroup: one BatchExecuteStatement's statements", () => {
  it("takes queue order up to the limit", () => {
    const { group, rest } = takeGroup(q("a", "b", "c"), 2);
    expect(group.map((p) => p.item)).toEqual(["a", "b"]);
    expect(rest.map((p) => p.item)).toEqual(["c"]);
  });

  it("never names one item twice: a second statement on an item waits for a later request", () => {
    const queue = q("a", "b", "a", "c", "a");
    const first = takeGroup(queue, 25);
    expect(first.group.map((p) => p.n)).toEqual([0, 1, 3]);
    const second = takeGroup(first.rest, 25);
    expect(second.group.map((p) => p.n)).toEqual([2]);
    expect(takeGroup(second.rest, 25).group.map((p) => p.n)).toEqual([4]);
  });

  it("keeps a skipped statement ahead of later ones in the rest", () => {
    const { rest } = takeGroup(q("a", "a", "b", "c"), 2);
    expect(rest.map((p) => p.n)).toEqual([1, 3]);
  });
});
