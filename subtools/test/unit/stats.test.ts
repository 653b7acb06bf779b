import { describe, expect, it } from "vitest";
import { LatencyStats } from "../../src/shared/mod.js";

function statsOf(values: number[]): LatencyStats {
  const s = new LatencyStats();
  for (const v of values) s.record(v);
  return s;
}

describe("stats — exact figures", () => {
  it("stats — MIN, MAX, MEAN and HARMONIC MEAN are exact on known inputs", () => {
    const s = statsOf([100, 200, 400, 800]);
    expect(s.count).toBe(4);
    expect(s.min).toBe(100);
    expect(s.max).toBe(800);
    expect(s.meanUs).toBe(375);
    // 4 / (1/100 + 1/200 + 1/400 + 1/800) = 4 / 0.01875
    expect(s.harmonicMeanUs).toBeCloseTo(213.3333333333, 9);
  });

  it("stats — fractional microseconds keep full precision in the exact figures", () => {
    const s = statsOf([1.5, 2.5]);
    expect(s.min).toBe(1.5);
    expect(s.max).toBe(2.5);
    expect(s.meanUs).toBe(2);
    expect(s.harmonicMeanUs).toBeCloseTo(2 / (1 / 1.5 + 1 / 2.5), 12);
  });

  it("stats — percentiles are exact below 2048 µs (3 significant digits) and bounded by min/max above", () => {
    const values = Array.from({ length: 1000 }, (_, i) => i + 1); // 1..1000 µs
    const s = statsOf(values);
    expect(s.percentileUs(50)).toBe(500);
    expect(s.percentileUs(90)).toBe(900);
    expect(s.percentileUs(99)).toBe(990);
    expect(s.percentileUs(99.9)).toBe(999);
    expect(s.percentileUs(100)).toBe(1000);
    const big = statsOf([1_000_000, 2_000_000, 3_000_000]);
    expect(big.percentileUs(100)).toBe(3_000_000);
    expect(Math.abs(big.percentileUs(50) - 2_000_000)).toBeLessThanOrEqual(2_000_000 / 1000);
  });

  it("stats — the running sums do not drift over a million small terms", () => {
    const s = new LatencyStats();
    for (let i = 0; i < 1_000_000; i++) s.record(1.1);
    expect(s.meanUs).toBeCloseTo(1.1, 12);
    expect(s.harmonicMeanUs).toBeCloseTo(1.1, 12);
  });

  it("stats — values below 1 µs (clock skew) count as 1 µs and are reported", () => {
    const s = statsOf([-5, 0, 10]);
    expect(s.clamped).toBe(2);
    expect(s.min).toBe(1);
    expect(s.harmonicMeanUs).toBeCloseTo(3 / (1 + 1 + 0.1), 12);
  });

  it("stats — empty stats give n/a figures, not zeros", () => {
    const s = new LatencyStats();
    expect(s.meanUs).toBeNaN();
    expect(s.harmonicMeanUs).toBeNaN();
    expect(s.percentileUs(50)).toBeNaN();
    expect(LatencyStats.fromJSON(s.toJSON()).count).toBe(0);
  });
});

describe("stats — merging", () => {
  const a = [3, 17, 250, 999, 4_000, 12_345, 70_000];
  const b = [1, 8, 250, 1_500, 60_000, 2_500_000];

  it("stats — adding two sets equals one set of both values", () => {
    const merged = statsOf(a);
    merged.add(statsOf(b));
    const one = statsOf([...a, ...b]);
    expect(merged.count).toBe(one.count);
    expect(merged.min).toBe(one.min);
    expect(merged.max).toBe(one.max);
    expect(merged.sumUs).toBe(one.sumUs);
    expect(merged.recipSum).toBeCloseTo(one.recipSum, 14);
    for (const p of [0, 10, 25, 50, 75, 90, 99, 99.9, 100]) expect(merged.percentileUs(p)).toBe(one.percentileUs(p));
    expect(merged.histogram.totalCount).toBe(one.histogram.totalCount);
  });

  it("stats — a snapshot (encoded histogram + exact sums) survives the JSON round trip and merges exactly", () => {
    const sa = LatencyStats.fromJSON(JSON.parse(JSON.stringify(statsOf(a).toJSON())));
    const sb = LatencyStats.fromJSON(JSON.parse(JSON.stringify(statsOf(b).toJSON())));
    sa.add(sb);
    const one = statsOf([...a, ...b]);
    expect(sa.toJSON().count).toBe(one.count);
    expect(sa.meanUs).toBeCloseTo(one.meanUs, 9);
    expect(sa.harmonicMeanUs).toBeCloseTo(one.harmonicMeanUs, 9);
    expect([sa.min, sa.max]).toEqual([one.min, one.max]);
    for (const p of [50, 90, 99, 99.9]) expect(sa.percentileUs(p)).toBe(one.percentileUs(p));
  });

  it("stats — reset empties everything for the next window", () => {
    const s = statsOf(a);
    s.reset();
    expect(s.count).toBe(0);
    expect(s.histogram.totalCount).toBe(0);
    s.record(42);
    expect([s.min, s.max, s.meanUs]).toEqual([42, 42, 42]);
  });

  it("stats — the faster bucket index records exactly what the library's own computation does", async () => {
    const hdr = await import("hdr-histogram-js");
    const plain = hdr.build({
      bitBucketSize: 64,
      autoResize: false,
      lowestDiscernibleValue: 1,
      highestTrackableValue: 3_600_000_000,
      numberOfSignificantValueDigits: 3,
    });
    const fast = new LatencyStats();
    for (let v = 1; v < 3_600_000_000; v = Math.ceil(v * 1.013) + 1) {
      plain.recordValue(v);
      fast.record(v);
    }
    expect(hdr.encodeIntoCompressedBase64(fast.histogram)).toBe(hdr.encodeIntoCompressedBase64(plain));
  });
});
