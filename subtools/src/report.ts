// Printing, in the label style of the users' original tool:
//   [  cluster-master  ] \tTotal received: 10400
//   [  cluster-master  ] \t\t MIN: 0.397ms
import type { LatencyStats } from "./stats.js";
import type { SubResult } from "./result.js";
import { LatencyStats as Stats } from "./stats.js";
import { SATURATED_PCT } from "./cpu.js";

export const TAG = "[  cluster-master  ] \t";

/** µs → "1.234ms" (µs resolution). */
export function ms3(us: number): string {
  return Number.isFinite(us) ? `${Number((us / 1000).toFixed(3))}ms` : "n/a";
}

/** µs → ms with ns resolution, for the exact means. */
export function ms6(us: number): string {
  return Number.isFinite(us) ? `${Number((us / 1000).toFixed(6))}ms` : "n/a";
}

/** The latency block; `suffix` is " (current)" for the live window. */
export function latencyLines(s: LatencyStats, suffix = "", percentiles: readonly number[] = [50, 90, 99, 99.9]): string[] {
  const lines = [
    `\t MIN${suffix}: ${ms3(s.count ? s.min : NaN)}`,
    `\t MAX${suffix}: ${ms3(s.count ? s.max : NaN)}`,
    `\t MEAN${suffix}: ${ms6(s.meanUs)}`,
    `\t HARMONIC MEAN${suffix}: ${ms6(s.harmonicMeanUs)}`,
  ];
  for (const p of percentiles) lines.push(`\t p${p}${suffix}: ${ms3(s.percentileUs(p))}`);
  return lines;
}

/** One line per second while running. */
export function liveLine(elapsedS: number, connected: number, clients: number, rate: number, w: LatencyStats, cpuMax: number): string {
  const f = (label: string, v: string): string => `${label} (current): ${v}`;
  return TAG + [
    `${elapsedS}s clients ${connected}/${clients}`,
    `${Math.round(rate)} msg/s`,
    [f("MIN", ms3(w.count ? w.min : NaN)), f("MAX", ms3(w.count ? w.max : NaN)), f("MEAN", ms3(w.meanUs)),
      f("HARMONIC MEAN", ms3(w.harmonicMeanUs)), f("p50", ms3(w.percentileUs(50))), f("p99", ms3(w.percentileUs(99)))].join(" "),
    `cpu max ${cpuMax.toFixed(0)}%`,
  ].join(" | ");
}

/** The cumulative report printed at the end of a run and by `merge`. */
export function reportLines(r: SubResult): string[] {
  const c = r.counts;
  const lat = Stats.fromJSON(r.latency);
  const out: string[] = [];
  const add = (s: string): void => { out.push(TAG + s); };
  add(`Target: ${r.target} ${r.hosts.join(",")}:${r.port} channels ${r.channels.join(",")}; ${(r.durationMs / 1000).toFixed(1)}s, stopped by ${r.stopReason}`);
  add(`Clients: ${c.clients} (connected at least once ${c.everConnected}, peak together ${c.peakConnected}, connect failures ${c.connectFailures}, reconnects ${c.reconnects}, subscribe errors ${c.subErrors})`);
  add(`Total received: ${c.received}`);
  add(`Expected: ${c.expected}`);
  add(`Lost: ${c.lost}`);
  add(`Duplicated: ${c.duplicated}`);
  add(`Out-of-order: ${c.outOfOrder}${c.late ? ` (${c.late} older than the tracking window)` : ""}`);
  add(`End markers: ${c.endMarkers}${c.badFrames ? `; unreadable frames: ${c.badFrames}` : ""}`);
  for (const l of latencyLines(lat)) add(l);
  if (lat.clamped) add(`WARNING: ${lat.clamped} latencies below 1 µs were counted as 1 µs (clocks of publisher and subscriber hosts disagree?)`);
  for (const p of r.cpu) add(`CPU ${p.name}: avg ${p.avgPct.toFixed(1)}% peak ${p.peakPct.toFixed(1)}% of one core`);
  const hot = r.cpu.filter((p) => p.saturatedS > 0);
  if (hot.length) {
    add(`WARNING: load generator saturated: ${hot.map((p) => `${p.name} ${p.saturatedS}s`).join(", ")} above ${SATURATED_PCT}% of a core while receiving; latencies include this tool's own queueing — use more processes or hosts`);
  }
  return out;
}
