import { describe, expect, it } from "vitest";
import { LatencyStats } from "../../src/shared/mod.js";
import { emptyCounts, mergeResults, type SubResult } from "../../src/result.js";
import { reportLines, TAG } from "../../src/report.js";

function result(values: number[], over: Partial<SubResult> = {}): SubResult {
  const s = new LatencyStats();
  for (const v of values) s.record(v);
  const counts = {
    ...emptyCounts(),
    clients: 2,
    everConnected: 2,
    peakConnected: 2,
    received: values.length,
    distinct: values.length,
    expected: values.length + 1,
    lost: 1,
  };
  return {
    version: 1,
    tool: "sub-cluster",
    target: "redis",
    hosts: ["127.0.0.1"],
    port: 6379,
    channels: ["bench.x"],
    processes: 1,
    clientsPerProcess: 2,
    startedAt: "2025-01-01T00:00:00.000Z",
    durationMs: 1000,
    stopReason: "duration",
    counts,
    latency: s.toJSON(),
    cpu: [{ name: "sub-1", avgPct: 10, peakPct: 20, saturatedS: 0 }],
    ...over,
  };
}

describe("sub-cluster report", () => {
  it("sub-cluster report — uses the users' labels, in ms", () => {
    const lines = reportLines(result([397, 6327, 2000]));
    expect(lines).toContain(`${TAG}Total received: 3`);
    expect(lines).toContain(`${TAG}Lost: 1`);
    expect(lines).toContain(`${TAG}\t MIN: 0.397ms`);
    expect(lines).toContain(`${TAG}\t MAX: 6.327ms`);
    expect(lines).toContain(`${TAG}\t MEAN: 2.908ms`);
    expect(lines.some((l) => l.startsWith(`${TAG}\t HARMONIC MEAN: `))).toBe(true);
    expect(lines.some((l) => l.startsWith(`${TAG}\t p99.9: `))).toBe(true);
    expect(lines.some((l) => l.includes("saturated"))).toBe(false);
  });

  it("sub-cluster report — a process over 90 % of a core is flagged", () => {
    const lines = reportLines(result([1000], { cpu: [{ name: "sub-1", avgPct: 95, peakPct: 99, saturatedS: 4 }] }));
    expect(lines.some((l) => l.includes("WARNING: load generator saturated: sub-1 4s"))).toBe(true);
  });

  it("sub-cluster report — merging results adds counts and histograms and combines min/max exactly", () => {
    const a = [500, 1500, 90_000];
    const b = [20, 700];
    const m = mergeResults([result(a), result(b, { cpu: [{ name: "sub-1", avgPct: 5, peakPct: 6, saturatedS: 0 }] })], ["a.json", "b.json"]);
    const both = new LatencyStats();
    for (const v of [...a, ...b]) both.record(v);
    const lat = LatencyStats.fromJSON(m.latency);
    expect(m.counts.received).toBe(5);
    expect(m.counts.lost).toBe(2);
    expect(m.counts.clients).toBe(4);
    expect([lat.count, lat.min, lat.max, lat.sumUs]).toEqual([5, 20, 90_000, both.sumUs]);
    expect(lat.harmonicMeanUs).toBeCloseTo(both.harmonicMeanUs, 9);
    for (const p of [50, 90, 99]) expect(lat.percentileUs(p)).toBe(both.percentileUs(p));
    expect(m.cpu.map((c) => c.name)).toEqual(["a.json:sub-1", "b.json:sub-1"]);
  });
});
