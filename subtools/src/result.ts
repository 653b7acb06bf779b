// A run's result as written by --json, and the exact merge of several (one per load-generating host).
import type { WorkerCounts } from "./ipc.js";
import type { CpuSummary } from "./cpu.js";
import { LatencyStats, type LatencySnapshot } from "./stats.js";

export type SubResult = {
  version: 1;
  tool: "sub-cluster";
  target: string;
  hosts: string[];
  port: number;
  channels: string[];
  processes: number;
  clientsPerProcess: number;
  startedAt: string;
  durationMs: number;
  stopReason: string;
  counts: WorkerCounts;
  /** Exact sums and the encoded HDR histogram of every delivery's latency (µs). */
  latency: LatencySnapshot;
  cpu: CpuSummary[];
  /** Files this result was merged from. */
  mergedFrom?: string[];
};

export function emptyCounts(): WorkerCounts {
  return {
    clients: 0, everConnected: 0, peakConnected: 0, received: 0, distinct: 0, expected: 0, lost: 0,
    duplicated: 0, outOfOrder: 0, late: 0, endMarkers: 0, connectFailures: 0, reconnects: 0, subErrors: 0, badFrames: 0,
  };
}

export function addCounts(into: WorkerCounts, c: WorkerCounts): void {
  for (const k of Object.keys(into) as (keyof WorkerCounts)[]) into[k] += c[k];
}

export function isSubResult(v: unknown): v is SubResult {
  const o = v as SubResult | null;
  return !!o && o.tool === "sub-cluster" && o.version === 1 && typeof o.counts === "object" && typeof o.latency === "object";
}

/**
 * Combines results exactly: histograms added, counts and sums (incl. reciprocal sums) added, min/max
 * combined. Nothing is averaged. CPU figures are kept per process, labelled with their source.
 */
export function mergeResults(results: readonly SubResult[], names: readonly string[]): SubResult {
  if (results.length === 0) throw new Error("nothing to merge");
  const counts = emptyCounts();
  const latency = new LatencyStats();
  const cpu: CpuSummary[] = [];
  results.forEach((r, i) => {
    addCounts(counts, r.counts);
    latency.add(LatencyStats.fromJSON(r.latency));
    for (const c of r.cpu) cpu.push({ ...c, name: `${names[i] ?? i}:${c.name}` });
  });
  const first = results[0]!;
  const uniq = <T>(xs: T[]): T[] => [...new Set(xs)];
  return {
    version: 1,
    tool: "sub-cluster",
    target: uniq(results.map((r) => r.target)).join(","),
    hosts: uniq(results.flatMap((r) => r.hosts)),
    port: first.port,
    channels: uniq(results.flatMap((r) => r.channels)),
    processes: results.reduce((a, r) => a + r.processes, 0),
    clientsPerProcess: first.clientsPerProcess,
    startedAt: results.map((r) => r.startedAt).sort()[0]!,
    durationMs: Math.max(...results.map((r) => r.durationMs)),
    stopReason: uniq(results.map((r) => r.stopReason)).join(","),
    counts,
    latency: latency.toJSON(),
    cpu,
    mergedFrom: [...names],
  };
}
