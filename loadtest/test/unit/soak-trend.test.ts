// The soak verdict's arithmetic, in process: the slope and its interval against known lines, and the rule
// (significant AND material; bounds; caches by bound only) on made-up samples.
import { describe, expect, it } from "vitest";
import { fit, t95, trend, type Point } from "../../soak/trend.js";
import { judge } from "../../soak/verdict.js";
import type { Sample } from "../../soak/sampler.js";
import { rng } from "../../bench/rng.js";

const MiB = 1_048_576;
const line = (n: number, a: number, bPerS: number, noise = 0, seed = 1): Point[] => {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => [i * 10, a + bPerS * i * 10 + (r() - 0.5) * 2 * noise] as Point);
};

function samples(n: number, f: (i: number, t: number) => { rss: number; feeds: number; cache?: number }): Sample[] {
  return Array.from({ length: n }, (_, i) => {
    const t = i * 10;
    const v = f(i, t);
    const w = (worker: string, pid: number) => ({
      worker,
      pid,
      rssBytes: v.rss,
      openFds: 40,
      state: { heap_used_bytes: 20 * MiB, hub_feeds: v.feeds, hook_cache_subscribe: v.cache ?? 50 },
    });
    return {
      t,
      workers: [w("1", 11), w("2", 12)],
      primaryRssBytes: 60 * MiB,
      natsRssBytes: 30 * MiB,
      consumers: 5,
      streamMessages: i * 100,
      workerRestarts: 0,
    };
  });
}

describe("soak trend — least squares with a 95% interval", () => {
  it("soak trend — an exact line gives its slope per hour and a zero-width interval", () => {
    const f = fit(line(50, 100, 0.5))!;
    expect(f.slopePerHour).toBeCloseTo(1800, 6);
    expect(f.ciLowPerHour).toBeCloseTo(1800, 6);
    expect(f.growth).toBeCloseTo(0.5 * 490, 6);
  });

  it("soak trend — flat noise: the interval holds zero, nothing grows", () => {
    const tr = trend(line(200, 100 * MiB, 0, 20 * MiB, 3), { abs: 32 * MiB, rel: 0.15 });
    expect(tr.fit!.ciLowPerHour).toBeLessThan(0);
    expect(tr.fit!.ciHighPerHour).toBeGreaterThan(0);
    expect(tr.grows).toBe(false);
  });

  it("soak trend — a small steady rise is significant but below the threshold: not growing", () => {
    const tr = trend(line(300, 100 * MiB, 1_000, 1 * MiB), { abs: 32 * MiB, rel: 0.15 }); // +3 MB over 50 min
    expect(tr.significant).toBe(true);
    expect(tr.material).toBe(false);
    expect(tr.grows).toBe(false);
  });

  it("soak trend — a leak of 20 KB/s in noisy RSS is significant and material", () => {
    const tr = trend(line(300, 100 * MiB, 20_000, 10 * MiB, 5), { abs: 32 * MiB, rel: 0.15 });
    expect(tr.grows).toBe(true);
  });

  it("soak trend — too few points give no fit; t is Student's for small samples", () => {
    expect(fit([[0, 1]])).toBeUndefined();
    expect(t95(1)).toBeCloseTo(12.706);
    expect(t95(500)).toBe(1.96);
  });
});

describe("soak verdict — series, bounds and caches", () => {
  it("soak verdict — steady samples pass; the warm-up is not fitted", () => {
    const v = judge(
      samples(60, (i) => ({ rss: (i < 10 ? 50 + i * 5 : 100) * MiB, feeds: 10 + (i % 3) })),
      { warmupS: 100, bounds: { hub_feeds: 35 }, expectWorkers: 2 },
    );
    expect(v.failures).toEqual([]);
    expect(v.ok).toBe(true);
    expect(v.workersSeen).toEqual(["1", "2"]);
  });

  it("soak verdict — a table that keeps gaining entries fails as growing, and past its bound as over bound", () => {
    const v = judge(
      samples(60, (i) => ({ rss: 100 * MiB, feeds: 5 + i })),
      { warmupS: 100, bounds: { hub_feeds: 35 }, expectWorkers: 2 },
    );
    expect(v.ok).toBe(false);
    expect(v.failures.some((f) => f.startsWith("w1.hub_feeds grows"))).toBe(true);
    expect(v.failures.some((f) => /w1\.hub_feeds reached 64, past its bound 35/.test(f))).toBe(true);
  });

  it("soak verdict — a cache filling up to its bound is no failure; past it is", () => {
    const filling = judge(
      samples(60, (i) => ({ rss: 100 * MiB, feeds: 10, cache: Math.min(200, i * 5) })),
      {
        warmupS: 0,
        bounds: { hook_cache_subscribe: 200 },
        expectWorkers: 2,
      },
    );
    expect(filling.ok).toBe(true);
    const over = judge(
      samples(60, (i) => ({ rss: 100 * MiB, feeds: 10, cache: i * 5 })),
      { warmupS: 0, bounds: { hook_cache_subscribe: 200 }, expectWorkers: 2 },
    );
    expect(over.failures).toContain("w1.hook_cache_subscribe reached 295, past its bound 200");
  });

  it("soak verdict — a missing worker fails the run", () => {
    const s = samples(30, () => ({ rss: 100 * MiB, feeds: 10 })).map((x) => ({ ...x, workers: x.workers.slice(0, 1) }));
    expect(judge(s, { warmupS: 0, bounds: {}, expectWorkers: 2 }).failures).toContain("samples from 1 workers, expected 2");
  });
});
