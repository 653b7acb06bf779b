// A run's result as written by --json, and the exact merge of several (one per load-generating host).
import type { ToolDelay, WorkerCounts } from "./ipc.js";
import { LatencyStats, type ClockEstimate, type CpuSummary, type LatencySnapshot } from "./shared/mod.js";
import type { PublisherClock } from "./receiver.js";

/**
 * How the latencies of a run relate to clocks:
 * - `single-host`: every publisher ran on this host (one clock, nothing to correct);
 * - `corrected`: publishers on other hosts, each latency corrected by both hosts' offsets to the server;
 * - `uncorrected`: a publisher on another host without a known offset (its latencies carry the clock skew);
 * - `no-messages`: nothing was received.
 */
export type ClockStatus = "single-host" | "corrected" | "uncorrected" | "no-messages";

export type ClockSection = {
  /** This host (as in publisher ids). */
  host: string;
  /** This host's offset to the server, or null with the reason. */
  self: ClockEstimate | null;
  selfReason?: string;
  publishers: PublisherClock[];
  status: ClockStatus;
};

export type SubResult = {
  version: 1;
  tool: "sub-cluster";
  target: string;
  engine?: string;
  hosts: string[];
  port: number;
  channels: string[];
  processes: number;
  clientsPerProcess: number;
  startedAt: string;
  durationMs: number;
  stopReason: string;
  counts: WorkerCounts;
  /** Failed connection attempts by cause. */
  failures?: Record<string, number>;
  /** Clients that never subscribed, by the cause of their last failed attempt. */
  neverConnected?: Record<string, number>;
  /** What the run said about itself: address spreading, processes that died, … */
  notes?: string[];
  clock?: ClockSection;
  /**
   * Where receive times come from: `kernel` (native engine: the kernel's stamp when the bytes reached the
   * socket, with how long the process took to read them after that), `user` (native, some reads unstamped),
   * `process` (lean and ws engines: the time the process read them).
   */
  receiveClock?: { source: "kernel" | "user" | "process"; toolDelay?: ToolDelay };
  /**
   * Receive times (µs since the epoch) of the first and the last message over every process, end markers aside:
   * the span a subscriber rate is taken over. Node engines; absent when nothing was received.
   */
  messagesUs?: { first: number; last: number };
  /** Exact sums and the encoded HDR histogram of every delivery's latency (µs). */
  latency: LatencySnapshot;
  cpu: CpuSummary[];
  /** Files this result was merged from. */
  mergedFrom?: string[];
  /** Clock sections of merged results, by file. */
  mergedClocks?: { name: string; clock: ClockSection | null }[];
};

export function emptyCounts(): WorkerCounts {
  return {
    planned: 0,
    clients: 0,
    everConnected: 0,
    peakConnected: 0,
    received: 0,
    distinct: 0,
    expected: 0,
    lost: 0,
    duplicated: 0,
    outOfOrder: 0,
    late: 0,
    endMarkers: 0,
    connectFailures: 0,
    reconnects: 0,
    subErrors: 0,
    badFrames: 0,
  };
}

export function addCounts(into: WorkerCounts, c: WorkerCounts): void {
  for (const k of Object.keys(into) as (keyof WorkerCounts)[]) into[k] += c[k] ?? 0;
}

export function addTally(into: Record<string, number>, t: Record<string, number> | undefined): void {
  if (t) for (const [k, v] of Object.entries(t)) into[k] = (into[k] ?? 0) + v;
}

export function clockStatus(publishers: readonly PublisherClock[]): ClockStatus {
  if (publishers.length === 0) return "no-messages";
  if (publishers.every((p) => p.sameHost)) return "single-host";
  return publishers.every((p) => p.sameHost || p.corrected) ? "corrected" : "uncorrected";
}

export function isSubResult(v: unknown): v is SubResult {
  const o = v as SubResult | null;
  return !!o && o.tool === "sub-cluster" && o.version === 1 && typeof o.counts === "object" && typeof o.latency === "object";
}

export class ClockMixError extends Error {
  override readonly name = "ClockMixError";
}

/**
 * Results whose latencies cannot be compared with others': a run that received from a publisher on another
 * host without knowing the offset between the two clocks.
 */
export function unknownOffsets(results: readonly SubResult[], names: readonly string[]): string[] {
  if (results.length < 2) return [];
  return results.flatMap((r, i) => {
    const name = names[i] ?? String(i);
    if (!r.clock || r.clock.status !== "uncorrected") return [];
    const bad = r.clock.publishers.filter((p) => !p.sameHost && !p.corrected).map((p) => p.host);
    return [
      `${name}: publishers on ${[...new Set(bad)].join(", ")} with no known clock offset${r.clock.self ? "" : ` (this host's: ${r.clock.selfReason ?? "unknown"})`}`,
    ];
  });
}

/**
 * Combines results exactly: histograms added, counts and sums (incl. reciprocal sums) added, min/max
 * combined. Nothing is averaged. CPU figures are kept per process, labelled with their source. Throws
 * ClockMixError when latencies measured against unknown clock offsets would be mixed, unless `acceptUnknown`.
 */
export function mergeResults(results: readonly SubResult[], names: readonly string[], acceptUnknown = false): SubResult {
  if (results.length === 0) throw new Error("nothing to merge");
  const unknown = unknownOffsets(results, names);
  if (unknown.length > 0 && !acceptUnknown) {
    throw new ClockMixError(
      `refusing to merge latencies measured on clocks whose offsets are unknown:\n  ${unknown.join("\n  ")}\n` +
        "Run pub-cluster and sub-cluster against a gateway whose pong carries its time (or Redis), or pass --accept-unknown-offsets to merge anyway (the report then says so).",
    );
  }
  const counts = emptyCounts();
  const latency = new LatencyStats();
  const cpu: CpuSummary[] = [];
  const failures: Record<string, number> = {};
  const neverConnected: Record<string, number> = {};
  const notes: string[] = [];
  results.forEach((r, i) => {
    addCounts(counts, r.counts);
    addTally(failures, r.failures);
    addTally(neverConnected, r.neverConnected);
    for (const n of r.notes ?? []) notes.push(`${names[i] ?? i}: ${n}`);
    latency.add(LatencyStats.fromJSON(r.latency));
    for (const c of r.cpu) cpu.push({ ...c, name: `${names[i] ?? i}:${c.name}` });
  });
  if (unknown.length > 0) notes.push(`WARNING: merged with --accept-unknown-offsets; latencies of ${unknown.join("; ")} include the clock skew between hosts`);
  const legacy = results.flatMap((r, i) => (r.clock ? [] : [names[i] ?? String(i)]));
  if (results.length > 1 && legacy.length > 0)
    notes.push(
      `WARNING: ${legacy.join(", ")} carry no clock information (an older sub-cluster): if their publishers ran on other hosts, their latencies include the clock skew`,
    );
  const first = results[0]!;
  const uniq = <T>(xs: T[]): T[] => [...new Set(xs)];
  return {
    version: 1,
    tool: "sub-cluster",
    target: uniq(results.map((r) => r.target)).join(","),
    engine: uniq(results.map((r) => r.engine ?? "ws")).join(","),
    hosts: uniq(results.flatMap((r) => r.hosts)),
    port: first.port,
    channels: uniq(results.flatMap((r) => r.channels)),
    processes: results.reduce((a, r) => a + r.processes, 0),
    clientsPerProcess: first.clientsPerProcess,
    startedAt: results.map((r) => r.startedAt).sort()[0]!,
    durationMs: Math.max(...results.map((r) => r.durationMs)),
    stopReason: uniq(results.map((r) => r.stopReason)).join(","),
    counts,
    failures,
    neverConnected,
    notes,
    latency: latency.toJSON(),
    cpu,
    mergedFrom: [...names],
    mergedClocks: results.map((r, i) => ({ name: names[i] ?? String(i), clock: r.clock ?? null })),
  };
}
