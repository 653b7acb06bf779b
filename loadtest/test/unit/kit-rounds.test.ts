import { describe, expect, it } from "vitest";
import { alternate, bestOf, median, medianIndex, runRounds } from "../../kit/rounds.js";

describe("bench kit — rounds", () => {
  it("rounds — warm-up rounds run first and are not returned; the round number counts across them", async () => {
    const seen: number[] = [];
    const got = await runRounds({ rounds: 3, warmup: 2 }, async (r) => {
      seen.push(r);
      return r * 10;
    });
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(got).toEqual([20, 30, 40]);
  });

  it("rounds — legs alternate their order from round to round", () => {
    expect([0, 1, 2].map((r) => alternate(["a", "b", "c"], r).join(""))).toEqual(["abc", "cba", "abc"]);
  });

  it("rounds — median and the index of the median round", () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(3);
    expect(median([])).toBeNaN();
    expect(medianIndex([0.9, 0.5, 1.2])).toBe(0);
    expect(medianIndex([4, 1, 3, 2])).toBe(3);
    expect(medianIndex([])).toBe(-1);
  });

  it("rounds — bestOf runs a leg `runs` times and keeps the highest score", async () => {
    const rates = [3, 9, 4];
    let i = 0;
    const best = await bestOf(
      3,
      async () => ({ rate: rates[i++]! }),
      (x) => x.rate,
    );
    expect([best.rate, i]).toEqual([9, 3]);
  });
});
